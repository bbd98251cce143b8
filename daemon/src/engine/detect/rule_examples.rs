//! Every rule's own examples as tests: the true and false positives that gitleaks' rule
//! sources list for its default rules (`rules/gitleaks-examples.toml`, one entry for every
//! rule of the vendored pack) and the `tps`/`fps` of our rules (`rules/redctx.toml`).
//!
//! A true positive passes when the rule itself finds it. Only for a rule the pack does not
//! load (the ones another family replaces, like `generic-api-key`) is it judged by the
//! detector layer as a whole: it must redact the example with the whole secret covered. A
//! false positive passes when the rule does not fire on it (gitleaks' own criterion: many
//! are another rule's true positives, such as Cloudflare's three key kinds); for a rule the
//! pack does not load that holds trivially, so those are counted apart. Deliberate misses
//! are listed in [`ALLOWED_MISSES`] with the reason.

use super::rulepack::{RulePack, Spans};
use super::{Candidate, DetectContext, Detector};
use serde::Deserialize;

const GITLEAKS_EXAMPLES: &str = include_str!("../../../rules/gitleaks-examples.toml");
const REDCTX_TOML: &str = include_str!("../../../rules/redctx.toml");

/// (rule id, a piece of the example, why the miss is deliberate). Every entry is a rule
/// the pack does not load, so the example is one the replacing family or the file-level
/// nature of the rule leaves to something else.
const ALLOWED_MISSES: &[(&str, &str, &str)] = &[
    (
        "pkcs12-file",
        "",
        "path-only rule: it flags a .p12/.pfx file by name; the layer redacts spans of text \
         and a PKCS#12 file is binary",
    ),
    (
        "kubernetes-secret-yaml",
        "YWRtaW46cGFzc3dvcmQ=",
        "replaced by S3/S8, which judge a value by its key: `extra` is no secret name and the \
         short base64 value has no secret shape of its own",
    ),
    (
        "kubernetes-secret-yaml",
        ".dockercfg:",
        "replaced by S3/S8: a `.dockercfg` block scalar under `data:` has no secret key name \
         on its line",
    ),
    (
        "generic-api-key",
        "dafa7817-e246-48f3-91a7-e87653d587b8",
        "replaced by S3/S7: UUID-shaped values stay readable by design",
    ),
    (
        "generic-api-key",
        "todo_secret_do_not_commit",
        "replaced by S3/S7, which judge a key by its head word (`commit` here), not by any \
         keyword inside it",
    ),
    (
        "generic-api-key",
        "<genericToken>\n",
        "replaced by S3/S7: a value on its own line inside an XML element is not an assignment",
    ),
    (
        "generic-api-key",
        "var genericToken string =",
        "replaced by S3/S7: a Go declaration with a type between name and value is not read \
         as an assignment",
    ),
    (
        "generic-api-key",
        "$genericToken .=",
        "replaced by S3/S7: PHP's append operator `.=` is not an assignment",
    ),
    (
        "generic-api-key",
        "System.setProperty(",
        "replaced by S3/S7: a name and value as call arguments are not an assignment",
    ),
    (
        "generic-api-key",
        "generic_TOKEN ::",
        "replaced by S3/S7: Makefile `::=`/`:::=` are not read as assignments",
    ),
];

#[derive(Deserialize)]
struct ExamplesFile {
    forms: Forms,
    rules: Vec<RuleExamples>,
}

#[derive(Deserialize)]
struct Forms {
    samples: Vec<String>,
}

#[derive(Deserialize)]
struct RuleExamples {
    id: String,
    #[serde(default)]
    generated: Vec<Generated>,
    #[serde(default)]
    tps: Vec<String>,
    #[serde(default)]
    generated_tps: Vec<String>,
    #[serde(default)]
    fps: Vec<String>,
    #[serde(default)]
    generated_fps: Vec<String>,
    #[serde(default)]
    path_tps: Vec<PathExample>,
    #[serde(default)]
    path_fps: Vec<PathExample>,
}

/// An example that only holds in a file of a given name (rules with a `path`).
#[derive(Deserialize)]
struct PathExample {
    path: String,
    text: String,
}

#[derive(Deserialize)]
struct Generated {
    identifier: String,
    secret: String,
}

/// One true positive: the text, the file it is in, and, when the example says it, the
/// secret inside it.
struct Tp {
    text: String,
    path: String,
    secret: Option<String>,
}

/// One false positive and the file it is in.
struct Fp {
    text: String,
    path: String,
}

type Examples = Vec<(String, Vec<Tp>, Vec<Fp>)>;

fn rule_examples() -> Examples {
    let file: ExamplesFile = toml::from_str(GITLEAKS_EXAMPLES).expect("gitleaks-examples.toml");
    let mut out = Vec::new();
    for r in file.rules {
        let mut tps: Vec<Tp> = r
            .tps
            .iter()
            .chain(&r.generated_tps)
            .map(|t| Tp {
                text: t.clone(),
                path: String::new(),
                secret: None,
            })
            .chain(r.path_tps.iter().map(|e| Tp {
                text: e.text.clone(),
                path: e.path.clone(),
                secret: None,
            }))
            .collect();
        for g in &r.generated {
            for form in &file.forms.samples {
                let text = form
                    .replace("{i}", &g.identifier)
                    .replace("{I}", &g.identifier.to_uppercase())
                    .replace("{s}", &g.secret);
                tps.push(Tp {
                    text,
                    path: String::new(),
                    secret: Some(g.secret.clone()),
                });
            }
        }
        let fps = r
            .fps
            .into_iter()
            .chain(r.generated_fps)
            .map(|text| Fp {
                text,
                path: String::new(),
            })
            .chain(r.path_fps.into_iter().map(|e| Fp {
                text: e.text,
                path: e.path,
            }))
            .collect();
        out.push((r.id, tps, fps));
    }
    #[derive(Deserialize)]
    struct Pack {
        rules: Vec<OurRule>,
    }
    #[derive(Deserialize)]
    struct OurRule {
        id: String,
        #[serde(default)]
        tps: Vec<String>,
        #[serde(default)]
        fps: Vec<String>,
    }
    let ours: Pack = toml::from_str(REDCTX_TOML).expect("redctx.toml");
    for r in ours.rules {
        assert!(
            !r.tps.is_empty() && !r.fps.is_empty(),
            "redctx rule {} needs tps and fps",
            r.id
        );
        let tps = r
            .tps
            .into_iter()
            .map(|text| Tp {
                text,
                path: String::new(),
                secret: None,
            })
            .collect();
        let fps = r
            .fps
            .into_iter()
            .map(|text| Fp {
                text,
                path: String::new(),
            })
            .collect();
        out.push((r.id, tps, fps));
    }
    out
}

fn by_rule(pack: &RulePack, id: &str, path: &str, text: &str) -> Vec<Candidate> {
    let mut out = Vec::new();
    pack.scan(text, path, &mut out);
    out.retain(|c| {
        c.detector
            .split_once('.')
            .is_some_and(|(_, rule)| rule == id)
    });
    out
}

/// Whether the layer's findings cover every byte of the first occurrence of `secret`
/// (or, without a known secret, whether it redacted anything).
fn layer_covers(detector: &Detector, path: &str, text: &str, secret: Option<&str>) -> bool {
    let findings = detector.detect(
        text,
        &DetectContext {
            rel_path: path,
            prose: false,
        },
    );
    match secret.and_then(|s| text.find(s).map(|at| (at, at + s.len()))) {
        Some((start, end)) => {
            let mut pos = start;
            for f in &findings {
                if f.start <= pos && f.end > pos {
                    pos = f.end;
                }
                if pos >= end {
                    return true;
                }
            }
            false
        }
        None => secret.is_none() && !findings.is_empty(),
    }
}

fn allowed(id: &str, text: &str) -> bool {
    ALLOWED_MISSES
        .iter()
        .any(|(rule, piece, _)| *rule == id && text.contains(piece))
}

#[test]
fn every_rule_finds_its_true_positives_and_skips_its_false_positives() {
    let pack = RulePack::builtin();
    let detector = Detector::new();
    let (mut by_the_rule, mut by_the_layer, mut allowed_misses) = (0, 0, 0);
    let (mut clean_fps, mut unloaded_fps) = (0, 0);
    let mut failures = Vec::new();
    let examples = rule_examples();
    for (id, tps, fps) in &examples {
        let loaded = pack.loads(id);
        for tp in tps {
            if !by_rule(&pack, id, &tp.path, &tp.text).is_empty() {
                by_the_rule += 1;
            } else if !loaded && layer_covers(&detector, &tp.path, &tp.text, tp.secret.as_deref()) {
                by_the_layer += 1;
            } else if !loaded && allowed(id, &tp.text) {
                allowed_misses += 1;
            } else {
                failures.push(format!("{id}: true positive missed: {:?}", tp.text));
            }
        }
        for fp in fps {
            if !loaded {
                unloaded_fps += 1;
            } else if by_rule(&pack, id, &fp.path, &fp.text).is_empty() {
                clean_fps += 1;
            } else {
                failures.push(format!("{id}: false positive found: {:?}", fp.text));
            }
        }
    }
    println!(
        "rule examples: {} rules; true positives: {by_the_rule} found by their rule, \
         {by_the_layer} by the layer (rules the pack does not load), {allowed_misses} allowed \
         misses; false positives: {clean_fps} left alone by their rule, {unloaded_fps} of rules \
         the pack does not load; {} failures",
        examples.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} rule examples fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_example_names_a_rule_and_every_allowed_miss_is_used() {
    let examples = rule_examples();
    let ids: Vec<&str> = examples.iter().map(|(id, _, _)| id.as_str()).collect();
    let pack_ids: String = [super::rulepack::GITLEAKS_TOML, REDCTX_TOML].concat();
    for id in &ids {
        assert!(
            pack_ids.contains(&format!("id = \"{id}\"")),
            "examples for unknown rule {id}"
        );
    }
    for line in super::rulepack::GITLEAKS_TOML.lines() {
        if let Some(id) = line
            .strip_prefix("id = \"")
            .and_then(|rest| rest.strip_suffix('"'))
        {
            assert!(ids.contains(&id), "gitleaks rule {id} has no examples");
        }
    }
    let pack = RulePack::builtin();
    for (rule, piece, why) in ALLOWED_MISSES {
        assert!(!why.is_empty());
        let used = examples.iter().any(|(id, tps, fps)| {
            id == rule
                && (tps.iter().any(|t| t.text.contains(piece))
                    || fps.iter().any(|f| f.text.contains(piece)))
        });
        assert!(used, "allowed miss for {rule} matches no example");
        assert!(
            !pack.loads(rule),
            "{rule} is loaded: it must find its own true positives"
        );
    }
}

/// Runs `search` (the whole pattern's `captures_iter` and a faster search of the same
/// rule) on every example of every rule, alone, behind identifier runs shorter and longer
/// than a prefix reaches, and repeated on one line and across lines; asserts the two
/// agree. Returns how many rules the faster search applies to, and how many of its
/// searches matched.
fn check_fast_search(
    search: impl Fn(&RulePack, &str, &str) -> Option<(Spans, Spans)>,
) -> (usize, usize) {
    let pack = RulePack::builtin();
    let (mut rules, mut matched) = (0, 0);
    for (id, tps, fps) in rule_examples() {
        let examples = tps
            .iter()
            .map(|t| &t.text)
            .chain(fps.iter().map(|f| &f.text));
        let mut applies = false;
        for t in examples {
            let texts = [
                t.clone(),
                format!("ab_c.d-{t}"),
                format!("{}{t}", "x".repeat(60)),
                format!("{t}{t} {t}\n{}{t}", "_.-9".repeat(12)),
            ];
            for text in &texts {
                let Some((want, got)) = search(&pack, &id, text) else {
                    continue;
                };
                applies = true;
                matched += usize::from(!want.is_empty());
                assert_eq!(got, want, "{id} on {text:?}");
            }
        }
        rules += usize::from(applies);
    }
    (rules, matched)
}

/// Rules that open with lazy identifier prefixes are searched without them first
/// (`Rule::for_each_match`); that search must report exactly what the whole pattern's
/// `captures_iter` reports.
#[test]
fn prefiltered_rule_searches_equal_whole_pattern_searches() {
    let (rules, matched) = check_fast_search(RulePack::unprefixed_search);
    assert!(
        rules > 80,
        "only {rules} rules search without their prefixes"
    );
    assert!(matched > 300, "only {matched} searches matched");
}

/// Rules whose matches all begin with one of their keywords are searched by anchored
/// attempts at the keyword scan's hits (`Rule::for_each_match`); that search must report
/// exactly what the whole pattern's `captures_iter` reports.
#[test]
fn anchored_rule_searches_equal_whole_pattern_searches() {
    let (rules, matched) = check_fast_search(RulePack::anchored_search);
    assert!(
        rules > 150,
        "only {rules} rules search anchored at keywords"
    );
    assert!(matched > 400, "only {matched} anchored searches matched");
}

/// A rule whose matches all hold a long run of one byte class skips texts without one
/// (`Rule::may_match`); that gate must pass every text the pattern matches. Checked on
/// every example of every gated rule, and on ordinary code, which most gates refuse.
#[test]
fn run_gates_pass_every_match() {
    let pack = RulePack::builtin();
    let code = "fn main() {\n    let total_count = items.iter().map(|x| x.len()).sum();\n}\n";
    let (mut gated, mut refused) = (0, 0);
    for (id, tps, fps) in rule_examples() {
        let examples = tps
            .iter()
            .map(|t| &t.text)
            .chain(fps.iter().map(|f| &f.text));
        for t in examples {
            for text in [t.clone(), format!("{code}{t}\n{code}")] {
                if let Some((passes, matches)) = pack.run_gate(&id, &text) {
                    assert!(passes || !matches, "{id} gate refuses {text:?}");
                }
            }
        }
        if let Some((passes, _)) = pack.run_gate(&id, code) {
            gated += 1;
            refused += usize::from(!passes);
        }
    }
    assert!(gated > 150, "only {gated} rules have a run gate");
    assert!(
        refused * 10 > gated * 9,
        "gates refused only {refused} of {gated} on plain code"
    );
}
