//! The cleaning rules on small cases whose answers the reference's `discovery.py` gives
//! (the differential tests compare whole drafts; these pin single rules).

use super::*;

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn cleaning_drops_short_long_reserved_and_repeated_values() {
    let long = "x".repeat(121);
    assert_eq!(
        clean_terms(&[
            " `Acme` ",
            "A",
            long.as_str(),
            "Client",
            "acme",
            "Two  words"
        ]),
        strings(&["Acme", "Two words"])
    );
}

#[test]
fn postprocess_routes_tools_and_drops_noise() {
    let result = Discovery {
        clients: strings(&["Norrland Bank", "Germany", "client", "notes.md"]),
        organizations: strings(&["Halvard Logistics", "Project Manager"]),
        people: strings(&["Avery Quinlan (PM)", "Avery", "Data Engineer", "ACME CORP"]),
        terms: strings(&[
            "Project Bluefin",
            "kubectl",
            "D12.3",
            "migration workflow",
            "likely typo",
        ]),
        allow: strings(&["kubectl", "a/b"]),
        ..Discovery::default()
    };
    let out = postprocess(&result, true);
    assert_eq!(out.clients, strings(&["Norrland Bank"]));
    assert_eq!(out.organizations, strings(&["Halvard Logistics"]));
    assert_eq!(out.people, strings(&["Avery Quinlan"]));
    assert_eq!(out.terms, strings(&["Project Bluefin"]));
    assert_eq!(out.allow, strings(&["kubectl"]));
    // Detector-style cleanup keeps tool-like terms where they were.
    assert_eq!(
        postprocess(&result, false).terms,
        strings(&["Project Bluefin", "kubectl"])
    );
}

#[test]
fn values_absent_from_the_text_are_dropped_and_spelling_restored() {
    let result = Discovery {
        clients: strings(&["norrland bank", "Invented Ltd"]),
        aliases: vec![
            ("Avery Quinlan".into(), strings(&["Ave", "Avery"])),
            ("Nobody".into(), strings(&["x"])),
        ],
        ..Discovery::default()
    };
    let out = filter_to_source(&result, "Avery Quinlan of Norrland Bank; Avery said so.");
    assert_eq!(out.clients, strings(&["Norrland Bank"]));
    // `Ave` occurs only inside `Avery`: not a whole word, dropped and counted.
    assert_eq!(
        out.aliases,
        vec![("Avery Quinlan".into(), strings(&["Avery"]))]
    );
    assert_eq!(out.dropped_aliases, 2);
}

#[test]
fn answers_parse_like_the_references() {
    assert_eq!(parse_response("no json here", false), Err(ParseError));
    assert_eq!(parse_response("[1]", false), Err(ParseError));
    let out = parse_response(
        "ok: {\"people\": [\"Avery Quinlan\", 7], \"aliases\": 3} done",
        true,
    )
    .unwrap();
    assert_eq!(out.people, strings(&["Avery Quinlan"]));
    assert_eq!(out.dropped_aliases, 1);
}

#[test]
fn first_names_and_addresses_become_alias_proposals() {
    let texts =
        strings(&["Avery Quinlan joined. Avery will write; mail avery.quinlan@example.invalid.\n"]);
    let groups = aliases::propose(&texts, &strings(&["Avery Quinlan"]), &[]);
    assert_eq!(
        groups,
        vec![(
            "Avery Quinlan".to_owned(),
            strings(&["Avery", "avery.quinlan@example.invalid"])
        )]
    );
    // A first name followed by another capitalised word could be someone else.
    let texts = strings(&["Avery Quinlan joined. Avery Smith too.\n"]);
    assert!(aliases::propose(&texts, &strings(&["Avery Quinlan"]), &[]).is_empty());
}

#[test]
fn the_merge_only_grows_lists_and_keeps_other_lines() {
    let existing = "# mine\n[redaction]\nclients = [\"Old\"] # kept?\n\n[other]\nx = 1\n";
    let found = Discovery {
        clients: strings(&["New Client"]),
        allow: strings(&["kubectl"]),
        ..Discovery::default()
    };
    let update = merge::update(existing, &found, None, false, false).unwrap();
    assert_eq!(
        update.config_text,
        "# mine\n[redaction]\nclients = [\n  \"Old\",\n  \"New Client\"\n]\n\norganizations = []\n\
         people = []\nterms = []\nallow = []\n\n[other]\nx = 1\n"
    );
    let again = merge::update(&update.config_text, &found, None, false, false).unwrap();
    assert!(!again.changed);
    assert_eq!(
        merge::update("[redaction\n", &found, None, false, false),
        Err("Existing redaction config is invalid TOML.".into())
    );
}

#[test]
fn jsonl_errors_name_lines_only() {
    assert_eq!(
        parse_jsonl("{\"path\":\"a\",\"text\":\"t\"}\nnope\n"),
        Err("Invalid discovery JSONL on line 2.".into())
    );
    assert_eq!(
        parse_jsonl("\n"),
        Err("Discovery JSONL contained no documents.".into())
    );
}
