//! The traced command. `tlblab trace record -- CMD` starts `tlblab trace-exec -- CMD`, which
//! stops itself (SIGSTOP) before executing CMD; the recorder sets its pid filter and turns
//! tracing on while the child is stopped, then lets it continue. So the trace starts exactly at
//! the command's first instruction, and `--only-cmd` follows it from there (same pid after
//! exec, children through `event-fork`).

use anyhow::{bail, Context, Result};
use nix::sys::signal::{kill, raise, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

/// Exit status when the command cannot be executed (as shells use).
const CANNOT_EXECUTE: u8 = 127;

/// The child side: stop, then become CMD.
pub fn exec(command: &[String]) -> Result<ExitCode> {
    raise(Signal::SIGSTOP).context("stopping before exec")?;
    let error = Command::new(&command[0]).args(&command[1..]).exec();
    eprintln!("tlblab: cannot execute {:?}: {error}", command[0]);
    Ok(ExitCode::from(CANNOT_EXECUTE))
}

/// A traced command, stopped until [`Child::start`]. Dropping it kills and reaps a command
/// that is still running (an error path).
pub struct Child {
    pid: Pid,
    status: Option<i32>,
}

impl Child {
    /// Starts `tlblab trace-exec -- command` and waits until it has stopped itself.
    pub fn spawn(command: &[String]) -> Result<Child> {
        let me = std::env::current_exe().context("finding the tlblab executable")?;
        let child = Command::new(me)
            .arg("trace-exec")
            .arg("--")
            .args(command)
            .spawn()
            .with_context(|| format!("starting {:?}", command[0]))?;
        let mut child = Child { pid: Pid::from_raw(child.id() as i32), status: None };
        match waitpid(child.pid, Some(WaitPidFlag::WUNTRACED)).context("waiting for the command")? {
            WaitStatus::Stopped(_, _) => Ok(child),
            other => {
                child.status = exit_code(other);
                let how = match other {
                    WaitStatus::Exited(_, code) => format!("it exited with status {code}"),
                    WaitStatus::Signaled(_, signal, _) => format!("{} ended it", signal.as_str()),
                    _ => "it did not stop".to_string(),
                };
                bail!("the command ended before it could be traced ({how})")
            }
        }
    }

    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.pid.as_raw() as u32
    }

    /// Lets it run.
    pub fn start(&self) -> Result<()> {
        kill(self.pid, Signal::SIGCONT).context("continuing the command")
    }

    /// Its exit status once it has ended: the exit code, or 128 + the signal (as shells).
    pub fn poll(&mut self) -> Option<i32> {
        if self.status.is_none() {
            if let Ok(s) = waitpid(self.pid, Some(WaitPidFlag::WNOHANG)) {
                self.status = exit_code(s);
            }
        }
        self.status
    }

    /// Sends `signal`.
    pub fn signal(&self, signal: Signal) {
        let _ = kill(self.pid, signal);
    }

    /// Waits for it to end, however long that takes.
    pub fn wait(&mut self) -> i32 {
        while self.status.is_none() {
            match waitpid(self.pid, None) {
                Ok(s) => self.status = exit_code(s),
                Err(nix::errno::Errno::EINTR) => {}
                // Already reaped, or not our child: nothing more to learn.
                Err(_) => self.status = Some(0),
            }
        }
        self.status.unwrap_or(0)
    }

    /// Waits up to `timeout` for it to end.
    pub fn wait_for(&mut self, timeout: Duration) -> Option<i32> {
        let until = Instant::now() + timeout;
        while self.poll().is_none() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.status
    }

    /// After Ctrl-C or SIGTERM reached the recorder: the command got a terminal's Ctrl-C
    /// itself; otherwise it gets `signal` after a second, and SIGKILL after five more.
    pub fn stop(&mut self, signal: Signal) -> i32 {
        if let Some(s) = self.wait_for(Duration::from_secs(1)) {
            return s;
        }
        self.signal(signal);
        if let Some(s) = self.wait_for(Duration::from_secs(5)) {
            return s;
        }
        self.signal(Signal::SIGKILL);
        self.wait_for(Duration::from_secs(5)).unwrap_or(128 + Signal::SIGKILL as i32)
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.poll().is_none() {
            self.signal(Signal::SIGKILL);
            let _ = waitpid(self.pid, None);
        }
    }
}

fn exit_code(status: WaitStatus) -> Option<i32> {
    match status {
        WaitStatus::Exited(_, code) => Some(code),
        WaitStatus::Signaled(_, signal, _) => Some(128 + signal as i32),
        _ => None,
    }
}
