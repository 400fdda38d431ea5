//! Ring-buffer events to flush-trace records, by the offsets of this kernel's format files.

use std::collections::HashMap;

use tlblab_flushtrace::{CallFunction, Flush, IpiSend, Other, Record, Switch, Task};
use tlblab_tracefs::format::Field;
use tlblab_tracefs::{RawEvent, Schema};

/// `CLONE_THREAD` (include/uapi/linux/sched.h): the new task joins its creator's thread group.
const CLONE_THREAD: u64 = 0x0001_0000;

/// How to decode one event id.
#[derive(Debug, Clone)]
enum Kind {
    Flush { reason: Field, pages: Field },
    Switch { prev_pid: Field, prev_state: Field, next_pid: Field },
    IpiSendCpu { cpu: Field, callback: Option<Field> },
    IpiSendMask { mask: Field, callback: Option<Field> },
    CallFunction { vector: Field, entry: bool, single: bool },
    NewTask { pid: Field, comm: Field, clone_flags: Field },
    Exec { pid: Field, filename: Field },
}

/// What one event says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// A record to write.
    Record(Record),
    /// A task was created: `parent` (the creator's pid), and whether it is a thread of the
    /// creator's process (then its tgid is the creator's).
    NewTask {
        /// Timestamp, ns.
        ts_ns: u64,
        /// The creator.
        parent: i32,
        /// The new task.
        pid: i32,
        /// Its comm (inherited from the creator).
        comm: String,
        /// `CLONE_THREAD` was set.
        thread: bool,
    },
    /// A task called `execve()`: its comm is now `comm`, its mm a new one.
    Exec(Task),
}

/// Decoders for every event an instance records, keyed by event id.
#[derive(Debug, Clone)]
pub struct Decoders {
    kinds: HashMap<u16, Kind>,
}

/// A format without the field an event must have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingField {
    /// `system:name`.
    pub event: String,
    /// The field.
    pub field: String,
}

impl Decoders {
    /// Decoders for the events of `schema`; events tlblab does not know become
    /// [`Record::Other`].
    pub fn new(schema: &Schema) -> Result<Decoders, MissingField> {
        let mut kinds = HashMap::new();
        for f in schema.formats() {
            let field = |name: &str| {
                f.field(name)
                    .cloned()
                    .ok_or_else(|| MissingField { event: f.name.clone(), field: name.to_string() })
            };
            let kind = match f.name.as_str() {
                "tlb_flush" => Kind::Flush { reason: field("reason")?, pages: field("pages")? },
                "sched_switch" => Kind::Switch {
                    prev_pid: field("prev_pid")?,
                    prev_state: field("prev_state")?,
                    next_pid: field("next_pid")?,
                },
                "ipi_send_cpu" => {
                    Kind::IpiSendCpu { cpu: field("cpu")?, callback: f.field("callback").cloned() }
                }
                "ipi_send_cpumask" => Kind::IpiSendMask {
                    mask: field("cpumask")?,
                    callback: f.field("callback").cloned(),
                },
                "call_function_entry"
                | "call_function_exit"
                | "call_function_single_entry"
                | "call_function_single_exit" => Kind::CallFunction {
                    vector: field("vector")?,
                    entry: f.name.ends_with("_entry"),
                    single: f.name.contains("_single_"),
                },
                "task_newtask" => Kind::NewTask {
                    pid: field("pid")?,
                    comm: field("comm")?,
                    clone_flags: field("clone_flags")?,
                },
                "sched_process_exec" => {
                    Kind::Exec { pid: field("pid")?, filename: field("filename")? }
                }
                _ => continue,
            };
            kinds.insert(f.id, kind);
        }
        Ok(Decoders { kinds })
    }

    /// Decodes one event; `Err` says which field did not fit in the record.
    pub fn decode(&self, ev: &RawEvent<'_>) -> Result<Decoded, String> {
        let Some(kind) = self.kinds.get(&ev.event_id) else {
            return Ok(Decoded::Record(Record::Other(Other {
                ts_ns: ev.ts_ns,
                cpu: ev.cpu,
                pid: ev.pid,
                event_id: ev.event_id,
            })));
        };
        let p = ev.payload;
        let int = |f: &Field| {
            f.read_i64(p).ok_or_else(|| {
                format!("event {} record of {} bytes has no field {}", ev.event_id, p.len(), f.name)
            })
        };
        let i32_of = |f: &Field| int(f).map(|v| v as i32);
        let (ts_ns, cpu, pid) = (ev.ts_ns, ev.cpu, ev.pid);
        let rec = match kind {
            Kind::Flush { reason, pages } => Record::Flush(Flush {
                ts_ns,
                cpu,
                pid,
                reason: i32_of(reason)?,
                // `unsigned long` stored, `%ld` printed: -1 is TLB_FLUSH_ALL.
                pages: pages
                    .read_as_signed(p)
                    .ok_or_else(|| format!("short tlb_flush ({} bytes)", p.len()))?,
            }),
            Kind::Switch { prev_pid, prev_state, next_pid } => Record::Switch(Switch {
                ts_ns,
                cpu,
                prev_pid: i32_of(prev_pid)?,
                prev_state: int(prev_state)?,
                next_pid: i32_of(next_pid)?,
            }),
            Kind::IpiSendCpu { cpu: target, callback } => Record::IpiSend(IpiSend {
                ts_ns,
                cpu,
                pid,
                targets: vec![int(target)? as u32],
                callback: callback.as_ref().map(int).transpose()?.unwrap_or(0) as u64,
            }),
            Kind::IpiSendMask { mask, callback } => Record::IpiSend(IpiSend {
                ts_ns,
                cpu,
                pid,
                targets: cpumask_bits(dynamic(mask, p)?),
                callback: callback.as_ref().map(int).transpose()?.unwrap_or(0) as u64,
            }),
            Kind::CallFunction { vector, entry, single } => Record::CallFunction(CallFunction {
                ts_ns,
                cpu,
                pid,
                vector: i32_of(vector)?,
                entry: *entry,
                single: *single,
            }),
            Kind::NewTask { pid: child, comm, clone_flags } => {
                return Ok(Decoded::NewTask {
                    ts_ns,
                    parent: pid,
                    pid: i32_of(child)?,
                    comm: c_string(fixed(comm, p)?),
                    thread: int(clone_flags)? as u64 & CLONE_THREAD != 0,
                })
            }
            Kind::Exec { pid: who, filename } => {
                // The kernel sets comm to the file's base name, cut to TASK_COMM_LEN - 1.
                let name = c_string(dynamic(filename, p)?);
                let base = name.rsplit('/').next().unwrap_or(&name);
                return Ok(Decoded::Exec(Task {
                    ts_ns,
                    pid: i32_of(who)?,
                    tgid: -1,
                    comm: base.chars().take(15).collect(),
                }));
            }
        };
        Ok(Decoded::Record(rec))
    }
}

/// The bytes of a fixed-size array field.
fn fixed<'a>(f: &Field, record: &'a [u8]) -> Result<&'a [u8], String> {
    record.get(f.offset..f.offset + f.size).ok_or_else(|| format!("no room for field {}", f.name))
}

/// The bytes of a `__data_loc` field: a u32 whose low half is the offset in the record and
/// high half the length.
fn dynamic<'a>(f: &Field, record: &'a [u8]) -> Result<&'a [u8], String> {
    let loc = f.read_i64(record).ok_or_else(|| format!("no room for field {}", f.name))? as u32;
    let (offset, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
    record
        .get(offset..offset + len)
        .ok_or_else(|| format!("field {} points outside the record ({offset}+{len})", f.name))
}

fn c_string(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// The CPUs set in a kernel cpumask (an array of little-endian `unsigned long`s).
fn cpumask_bits(bytes: &[u8]) -> Vec<u32> {
    let mut cpus = Vec::new();
    for (i, byte) in bytes.iter().enumerate() {
        for bit in 0..8 {
            if byte & (1 << bit) != 0 {
                cpus.push((i * 8 + bit) as u32);
            }
        }
    }
    cpus
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use tlblab_tracefs::format::parse_event_format;

    const MASK_FORMAT: &str = "name: ipi_send_cpumask\nID: 353\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
\tfield:__data_loc cpumask_t cpumask;\toffset:8;\tsize:4;\tsigned:0;\n\
\tfield:void * callsite;\toffset:16;\tsize:8;\tsigned:0;\n\
\tfield:void * callback;\toffset:24;\tsize:8;\tsigned:0;\n\n\
print fmt: \"cpumask=%s\", __get_cpumask(cpumask)\n";

    #[test]
    fn a_cpumask_record_names_its_targets() {
        let format = parse_event_format(MASK_FORMAT, Path::new("f")).unwrap();
        let schema = Schema::new([format]).unwrap();
        let d = Decoders::new(&schema).unwrap();
        // common fields: type 353, pid 77; cpumask at offset 32, 8 bytes: CPUs 1, 3 and 9.
        let mut rec = vec![0u8; 40];
        rec[0..2].copy_from_slice(&353u16.to_le_bytes());
        rec[4..8].copy_from_slice(&77i32.to_le_bytes());
        rec[8..12].copy_from_slice(&(32u32 | 8 << 16).to_le_bytes());
        rec[24..32].copy_from_slice(&0xffff_ffff_8123_4560u64.to_le_bytes());
        rec[32..40].copy_from_slice(&(1u64 << 1 | 1 << 3 | 1 << 9).to_le_bytes());
        let ev = schema.event(1, 500, &rec).unwrap();
        let Decoded::Record(Record::IpiSend(send)) = d.decode(&ev).unwrap() else { panic!() };
        assert_eq!(send.targets, vec![1, 3, 9]);
        assert_eq!((send.pid, send.cpu, send.callback), (77, 1, 0xffff_ffff_8123_4560));
        // A location pointing past the record is an error, not a panic.
        rec[8..12].copy_from_slice(&(36u32 | 8 << 16).to_le_bytes());
        let ev = schema.event(1, 500, &rec).unwrap();
        assert!(d.decode(&ev).unwrap_err().contains("outside the record"));
    }
}
