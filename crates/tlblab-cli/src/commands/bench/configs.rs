//! From the command line to configurations: scenarios × the combinations of option values.
//!
//! A configuration's parameters are kept as strings under the simulator's names (`busy` → `1`),
//! with every default filled in, so that two result files compare only when all settings are
//! equal. They go to and from `tlblab_live::LiveParams` through its serde form, so the names
//! and value spellings are the live crate's, written once.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use tlblab_bench::BenchConfig;
use tlblab_live::{scenario, scenarios, LiveParams, LiveScenarioInfo};

use crate::cli::BenchArgs;
use crate::commands::BadInput;

/// The options that take value lists, by name (without `--`), with the values given.
fn option_values(args: &BenchArgs) -> Vec<(&'static str, &[String])> {
    [
        ("touch", &args.touch),
        ("busy", &args.busy),
        ("tasks", &args.tasks),
        ("mode", &args.mode),
        ("pages", &args.pages),
        ("iterations", &args.iterations),
        ("op", &args.op),
    ]
    .into_iter()
    .filter(|(_, v)| !v.is_empty())
    .map(|(name, v)| (name, v.as_slice()))
    .collect()
}

/// Whether a scenario takes option `name`.
fn takes(info: &LiveScenarioInfo, name: &str) -> bool {
    info.params.iter().any(|p| p.strip_prefix("--") == Some(name))
}

/// The configurations to measure, in order: scenario by scenario, option combinations in the
/// order given (the last option varying fastest).
pub fn configurations(args: &BenchArgs) -> Result<Vec<BenchConfig>, BadInput> {
    let infos: Vec<&'static LiveScenarioInfo> = if args.scenarios.is_empty() {
        scenarios().iter().collect()
    } else {
        let mut infos = Vec::new();
        for name in &args.scenarios {
            let info = scenario(name).map_err(|e| BadInput(e.to_string()))?;
            if infos.iter().any(|i: &&LiveScenarioInfo| i.name == info.name) {
                return Err(BadInput(format!("scenario {name} is given twice")));
            }
            infos.push(info);
        }
        infos
    };
    let options = option_values(args);
    for (name, _) in &options {
        if !infos.iter().any(|info| takes(info, name)) {
            let names: Vec<&str> = infos.iter().map(|i| i.name).collect();
            return Err(BadInput(format!(
                "--{name}: none of the scenarios takes it ({}; `tlblab bench --list` shows \
                 their options)",
                names.join(", ")
            )));
        }
    }
    let mut configs = Vec::new();
    for info in infos {
        let mut combos: Vec<BTreeMap<String, String>> = vec![BTreeMap::new()];
        for (name, values) in options.iter().filter(|(name, _)| takes(info, name)) {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    values.iter().map(move |v| {
                        let mut c = c.clone();
                        c.insert(name.to_string(), v.trim().to_string());
                        c
                    })
                })
                .collect();
        }
        for given in combos {
            let params =
                live_params(&given).map_err(|e| BadInput(format!("{}: {e}", info.name)))?;
            let resolved = info.resolve(&params).map_err(|e| BadInput(e.to_string()))?;
            let config = BenchConfig {
                scenario: info.name.to_string(),
                params: param_strings(&resolved),
                unit: info.unit.symbol().to_string(),
                lower_is_better: info.lower_is_better(),
            };
            if configs.contains(&config) {
                return Err(BadInput(format!("{} is asked for twice", config.key())));
            }
            configs.push(config);
        }
    }
    Ok(configs)
}

/// Parameters as strings → `LiveParams` (numbers are numbers, the rest enum names). An error
/// names the option and value it refuses.
pub fn live_params(params: &BTreeMap<String, String>) -> Result<LiveParams, String> {
    let value =
        |v: &String| v.parse::<u64>().map_or_else(|_| Value::String(v.clone()), Value::from);
    let mut object = Map::new();
    for (k, v) in params {
        // One field at a time, so that the error names the option (serde's does not).
        let one = Map::from_iter([(k.clone(), value(v))]);
        serde_json::from_value::<LiveParams>(Value::Object(one))
            .map_err(|e| format!("--{k} {v}: {e}"))?;
        object.insert(k.clone(), value(v));
    }
    serde_json::from_value(Value::Object(object)).map_err(|e| e.to_string())
}

/// `LiveParams` → strings, the set ones only.
pub fn param_strings(params: &LiveParams) -> BTreeMap<String, String> {
    let Ok(Value::Object(object)) = serde_json::to_value(params) else {
        unreachable!("LiveParams serializes to an object")
    };
    object
        .into_iter()
        .map(|(k, v)| {
            let text = match v {
                Value::String(s) => s,
                other => other.to_string(),
            };
            (k, text)
        })
        .collect()
}

/// `tlblab bench --list`.
pub fn list(online_cpus: usize) -> String {
    let mut out = String::new();
    for info in scenarios() {
        let defaults = param_strings(info.defaults());
        let options: Vec<String> = defaults.iter().map(|(k, v)| format!("--{k} {v}")).collect();
        let needs = info.min_cpus(info.defaults());
        let fits = if needs > online_cpus {
            format!("; needs {needs} CPUs at these defaults, this machine has {online_cpus}")
        } else {
            String::new()
        };
        out.push_str(&format!(
            "{}  [{}]  {}{}\n    {}\n",
            info.name,
            info.unit.symbol(),
            if options.is_empty() { "(no options)".to_string() } else { options.join(" ") },
            fits,
            info.description
        ));
    }
    let live: Vec<&str> = scenarios().iter().map(|s| s.name).collect();
    let sim_only: Vec<&str> = tlblab_kernel::workloads::SCENARIOS
        .iter()
        .map(|s| s.name)
        .filter(|name| !live.contains(name))
        .collect();
    out.push_str(&format!(
        "\nSimulated only, not measured live (`tlblab sim run -s NAME`): {}\n",
        sim_only.join(", ")
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_round_trip_through_live_params() {
        let p = BTreeMap::from([
            ("tasks".to_string(), "2".to_string()),
            ("mode".to_string(), "processes".to_string()),
        ]);
        let live = live_params(&p).unwrap();
        assert_eq!(live.tasks, Some(2));
        assert_eq!(live.mode, Some(tlblab_live::Mode::Processes));
        assert_eq!(param_strings(&live), p);
    }

    #[test]
    fn bad_values_name_the_option() {
        let p = BTreeMap::from([
            ("busy".to_string(), "1".to_string()),
            ("mode".to_string(), "fibers".to_string()),
        ]);
        let e = live_params(&p).unwrap_err();
        assert!(e.starts_with("--mode fibers: "), "{e}");
        let p = BTreeMap::from([("busy".to_string(), "-1".to_string())]);
        assert!(live_params(&p).is_err());
    }
}
