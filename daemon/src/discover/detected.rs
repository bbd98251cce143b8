//! `redctx discover --detector` and `discover-update --detector`: plugged detectors
//! (the `patterns` rules, `exec` processes, loaded as serving loads them) draft the
//! terms instead of a model (the reference's `DetectorDiscoveryClient`). A span's
//! category picks its section; the same cleaning and source check as a model's answer
//! follow, but nothing is routed to `allow` (an allowed value is also exempt from the
//! operator's detector at serving time, so that would disable the rule).

use super::{self as rules, Discovery};
use crate::engine::placeholder::Category;
use crate::engine::plugged::Plugged;
use crate::policy_loader;
use std::path::PathBuf;

/// The plugged detectors one discovery drafts with.
pub struct Detected {
    /// Name (as receipts show it) and compiled detector, in `--detector` order.
    detectors: Vec<(String, Plugged)>,
    /// Rules files, programs and what programs name: never sampled.
    protected: Vec<PathBuf>,
}

/// The section a category feeds; every other category (emails, ids, secrets, …) is
/// found by the baseline already, so discovery skips it.
fn section(category: Category) -> Option<&'static str> {
    match category {
        Category::PERSON => Some("people"),
        Category::ORG => Some("organizations"),
        Category::CLIENT => Some("clients"),
        Category::SENSITIVE | Category::ENTITY => Some("terms"),
        _ => None,
    }
}

impl Detected {
    /// The detectors of `specs` (`NAME=ABSOLUTE PATH`); `None` when there are none.
    /// Failures are the fixed sentences serving gives.
    pub fn load(specs: &[String]) -> Result<Option<Detected>, String> {
        if specs.is_empty() {
            return Ok(None);
        }
        let list = policy_loader::launch_detectors(specs)?;
        let (defs, protected) =
            policy_loader::discovery_detectors(&list).map_err(|e| e.to_string())?;
        let detectors = defs
            .iter()
            .map(|def| Some((def.name.clone(), Plugged::compile(def)?)))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| "Detector failed.".to_owned())?;
        Ok(Some(Detected {
            detectors,
            protected,
        }))
    }

    /// The detectors' names, comma-separated (the draft's `# Source:` and the
    /// `detectors:` summary line).
    pub fn names(&self) -> String {
        let names: Vec<&str> = self.detectors.iter().map(|(n, _)| n.as_str()).collect();
        names.join(",")
    }

    /// The protected paths (absolute).
    pub fn protected(&self) -> &[PathBuf] {
        &self.protected
    }

    /// One text's terms: each detector's spans by section, cleaned, post-processed
    /// (without routing to `allow`) unless `raw`, and kept only where `text` has them.
    pub fn extract(&self, text: &str, raw: bool) -> Result<Discovery, String> {
        let mut found = Discovery::default();
        for (_, detector) in &self.detectors {
            for span in detector.detect(text).map_err(|e| e.to_string())? {
                if let Some(key) = section(span.category) {
                    found
                        .bucket_mut(key)
                        .push(text[span.start..span.end].to_owned());
                }
            }
        }
        let mut cleaned = found.map_buckets(rules::clean_terms);
        if !raw {
            cleaned = rules::postprocess(&cleaned, false);
        }
        Ok(rules::filter_to_source(&cleaned, text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn rules_file(dir: &Path) -> PathBuf {
        let path = dir.join("rules.toml");
        std::fs::write(
            &path,
            "[[patterns]]\ncategory = \"PERSON\"\nregex = \"Ada Quokkason|Bo\"\n\n\
             [[patterns]]\ncategory = \"CLIENT\"\nregex = \"Zanthor\"\n\n\
             [[patterns]]\ncategory = \"ENTITY\"\nregex = \"kubectl\"\n\n\
             [[patterns]]\ncategory = \"EMAIL\"\nregex = \"a@b\\\\.example\"\n",
        )
        .unwrap();
        path
    }

    #[test]
    fn categories_pick_sections_and_nothing_goes_to_allow() {
        let dir = tempfile::tempdir().unwrap();
        let rules = rules_file(dir.path());
        let spec = format!("patterns={}", rules.display());
        let detected = Detected::load(&[spec]).unwrap().unwrap();
        assert_eq!(detected.names(), "patterns");
        assert!(detected.protected().contains(&rules));
        let text = "Ada Quokkason and Bo met Zanthor; kubectl; a@b.example";
        let cooked = detected.extract(text, false).unwrap();
        assert_eq!(cooked.people, ["Ada Quokkason"]);
        assert_eq!(cooked.clients, ["Zanthor"]);
        // A tool-like term stays a term: detector categories are authoritative.
        assert_eq!(cooked.terms, ["kubectl"]);
        assert!(cooked.allow.is_empty() && cooked.organizations.is_empty());
        // Raw: the single first name survives (no person heuristics).
        let raw = detected.extract(text, true).unwrap();
        assert_eq!(raw.people, ["Ada Quokkason", "Bo"]);
    }

    #[test]
    fn no_specs_is_no_detector_and_a_bad_spec_is_refused() {
        assert!(Detected::load(&[]).unwrap().is_none());
        assert!(Detected::load(&["patterns=relative.toml".into()]).is_err());
    }
}
