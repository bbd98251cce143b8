//! Behaviour of the whole detector layer: what gets redacted, what stays readable.

use super::*;

fn spans(path: &str, text: &str) -> Vec<(String, &'static str)> {
    let d = Detector::new();
    d.detect(text, &DetectContext { rel_path: path, prose: false })
        .into_iter()
        .map(|f| (text[f.start..f.end].to_owned(), f.detector))
        .collect()
}

fn values(path: &str, text: &str) -> Vec<String> {
    spans(path, text).into_iter().map(|(v, _)| v).collect()
}

#[test]
fn findings_are_sorted_disjoint_and_on_char_boundaries() {
    let text = "пароль = \"сек рет\"\nDB_PASSWORD=hunter2!x\nemail jane@acme-corp.com\n";
    let d = Detector::new();
    let f = d.detect(text, &DetectContext { rel_path: ".env", prose: false });
    assert!(!f.is_empty());
    for w in f.windows(2) {
        assert!(w[0].end <= w[1].start);
    }
    for x in &f {
        assert!(text.is_char_boundary(x.start) && text.is_char_boundary(x.end));
    }
}
