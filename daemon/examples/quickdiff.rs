//! Dev tool: reads the reference oracle's JSON (from stdin) and reports where this
//! engine's output differs. Not part of the product.
use redctx_daemon::engine::{Engine, Mode, Policy, RedactOptions, policy::DetectorProfile};
use std::sync::Arc;

fn main() {
    let job: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(std::env::args().nth(1).unwrap()).unwrap())
            .unwrap();
    let results: serde_json::Value = serde_json::from_reader(std::io::stdin()).unwrap();
    let list = |k: &str| -> Vec<String> {
        job.get(k)
            .and_then(|v| v.as_array())
            .map(|a| a.iter().map(|x| x.as_str().unwrap().to_owned()).collect())
            .unwrap_or_default()
    };
    let (mut ok, mut bad) = (0, 0);
    for r in results.as_array().unwrap() {
        let mode = Mode::parse(r["mode"].as_str().unwrap()).unwrap();
        let profile = DetectorProfile::parse(r["profile"].as_str().unwrap()).unwrap();
        let policy = Policy {
            salt: job["salt"].as_str().unwrap().into(),
            mode,
            detector_profile: profile,
            clients: list("clients"),
            organizations: list("organizations"),
            people: list("people"),
            terms: list("terms"),
            allow: list("allow"),
            ..Policy::default()
        };
        let engine = Engine::new(Arc::new(policy)).unwrap();
        let text = r["text"].as_str().unwrap();
        let got = if r.get("path").is_some() {
            engine.redact_path(text).unwrap()
        } else {
            engine
                .redact(
                    text,
                    RedactOptions {
                        preserve_line_count: r["preserve"].as_bool().unwrap(),
                        prose: true,
                        path: "",
                    },
                )
                .unwrap()
        };
        let want = r["out"].as_str().unwrap();
        let counts: serde_json::Map<String, serde_json::Value> = got
            .counts
            .0
            .iter()
            .map(|(c, n)| (c.as_str().to_owned(), serde_json::json!(n)))
            .collect();
        let want_counts = r["counts"].as_object().unwrap();
        if got.text == want && &counts == want_counts {
            ok += 1;
        } else {
            bad += 1;
            if bad <= 15 {
                println!(
                    "MISMATCH {} {} pres={:?} input={:?}\n  want={:?} {:?}\n  got ={:?} {:?}",
                    r["mode"],
                    r["profile"],
                    r.get("preserve"),
                    text,
                    want,
                    want_counts,
                    got.text,
                    counts
                );
            }
        }
    }
    println!("ok={ok} bad={bad}");
}
