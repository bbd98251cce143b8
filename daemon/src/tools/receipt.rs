//! The receipt of one tool call (spec 5.11): what redaction did, never what it saw.

use crate::engine::Counts;
use crate::engine::detect::{DETECTOR_NAME, DETECTOR_RELEASE, rules_label};
use serde_json::{Map, Value, json};

/// Per-call activity of one plugged detector, in load order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DetectorReceipt {
    pub name: String,
    pub version: String,
    /// Distinct values the detector nominated during the call.
    pub nominated: u64,
    /// Spans redacted only at their own position.
    pub positional: u64,
}

/// `{"detector_profile": …, "counts_by_category": {…}[, "detectors": […]][,
/// "builtin_detector": {…}]}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Receipt {
    pub detector_profile: String,
    pub counts: Counts,
    /// `None` when no plugged detector is loaded (the key is then absent).
    pub detectors: Option<Vec<DetectorReceipt>>,
    /// The built-in detector layer ran under this call's policy: the receipt then names it
    /// (`"builtin_detector": {"name", "version", "rules"}`, our addition). Off (the
    /// `detectors = false` parity switch) leaves the reference's receipt byte for byte.
    pub builtin_detector: bool,
}

impl Receipt {
    /// The receipt as a JSON value: categories sorted by name, zero counts omitted.
    pub fn to_value(&self) -> Value {
        let mut counts = Map::new();
        // `Counts` is a BTreeMap keyed by category name: already sorted.
        for (category, n) in &self.counts.0 {
            if *n > 0 {
                counts.insert(category.as_str().to_owned(), Value::from(*n));
            }
        }
        let mut receipt = Map::new();
        receipt.insert(
            "detector_profile".to_owned(),
            Value::from(self.detector_profile.clone()),
        );
        receipt.insert("counts_by_category".to_owned(), Value::Object(counts));
        if let Some(detectors) = &self.detectors {
            let list = detectors
                .iter()
                .map(|d| json!({"name": d.name, "version": d.version, "nominated": d.nominated, "positional": d.positional}))
                .collect();
            receipt.insert("detectors".to_owned(), Value::Array(list));
        }
        if self.builtin_detector {
            receipt.insert(
                "builtin_detector".to_owned(),
                json!({"name": DETECTOR_NAME, "version": DETECTOR_RELEASE, "rules": rules_label()}),
            );
        }
        Value::Object(receipt)
    }

    /// Compact JSON, byte-identical to Python's
    /// `json.dumps(receipt, separators=(",", ":"), ensure_ascii=False)`.
    pub fn to_json(&self) -> String {
        serde_json::to_string(&self.to_value()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Category;

    #[test]
    fn receipt_of_the_spec_end_to_end_golden() {
        // Spec 17: the strict-mode read of the Fixture A notes file.
        let mut counts = Counts::default();
        for (category, n) in [
            (Category::PERSON, 6),
            (Category::CLIENT, 2),
            (Category::URL, 1),
            (Category::SECRET, 1),
            (Category::SENSITIVE, 1),
            (Category::ORG, 1),
            (Category::IP, 1),
            (Category::ENTITY, 3),
            (Category::HANDLE, 1),
            (Category::EMAIL, 1),
            (Category::DOMAIN, 1),
            (Category::PHONE, 1),
            (Category::CARD, 0),
        ] {
            counts.add(category, n);
        }
        let receipt = Receipt {
            detector_profile: "default".into(),
            counts,
            detectors: None,
            builtin_detector: false,
        };
        assert_eq!(
            receipt.to_json(),
            r#"{"detector_profile":"default","counts_by_category":{"CLIENT":2,"DOMAIN":1,"EMAIL":1,"ENTITY":3,"HANDLE":1,"IP":1,"ORG":1,"PERSON":6,"PHONE":1,"SECRET":1,"SENSITIVE":1,"URL":1}}"#
        );
    }

    #[test]
    fn receipt_lists_plugged_detectors_in_load_order() {
        let receipt = Receipt {
            detector_profile: "extended".into(),
            counts: Counts::default(),
            detectors: Some(vec![DetectorReceipt {
                name: "patterns".into(),
                version: "1".into(),
                nominated: 2,
                positional: 0,
            }]),
            builtin_detector: false,
        };
        assert_eq!(
            receipt.to_json(),
            r#"{"detector_profile":"extended","counts_by_category":{},"detectors":[{"name":"patterns","version":"1","nominated":2,"positional":0}]}"#
        );
    }

    #[test]
    fn receipt_names_the_builtin_detector_layer_only_when_it_ran() {
        let mut counts = Counts::default();
        counts.add(Category::SECRET, 2);
        let mut receipt = Receipt {
            detector_profile: "default".into(),
            counts,
            detectors: None,
            builtin_detector: true,
        };
        let label = rules_label();
        assert!(
            label.starts_with("gitleaks-8.30.1 (") && label.contains(" rules) + redctx ("),
            "{label}"
        );
        assert_eq!(
            receipt.to_json(),
            format!(
                r#"{{"detector_profile":"default","counts_by_category":{{"SECRET":2}},"builtin_detector":{{"name":"redctx-detect","version":"{DETECTOR_RELEASE}","rules":"{label}"}}}}"#
            )
        );
        // The parity switch: exactly the reference's receipt.
        receipt.builtin_detector = false;
        assert_eq!(
            receipt.to_json(),
            r#"{"detector_profile":"default","counts_by_category":{"SECRET":2}}"#
        );
    }
}
