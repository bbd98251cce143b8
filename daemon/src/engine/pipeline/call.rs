//! The state of one redaction call: the markers and counts of what it redacted
//! ([`Call`]) and the text between stages with its word-class shadow ([`Working`]).

use super::*;

/// State of one redaction call: markers and counts.
pub(super) struct Call<'e, 'r> {
    pub(super) engine: &'e Engine,
    pub(super) markers: Markers,
    pub(super) counts: Counts,
    pub(super) preserve: bool,
    pub(super) kept_line_breaks: bool,
    /// Told each placeholder made and the raw text it replaced (rehydration only).
    pub(super) record: Option<&'r mut dyn Record>,
}

impl Call<'_, '_> {
    /// Replaces `value` with a marker for its placeholder (plus its line breaks when
    /// line counts are preserved).
    pub(super) fn redact(&mut self, category: Category, value: &str) -> String {
        self.redact_as(category, value, value)
    }

    /// [`Call::redact`] of a match that may hold markers of earlier stages (a private URL
    /// whose password a detector replaced first): its placeholder is keyed on the text
    /// with those markers restored, so one URL gets one placeholder wherever it occurs,
    /// whatever the markers' numbering in this call.
    pub(super) fn redact_restored(&mut self, category: Category, value: &str) -> String {
        let restored = self.markers.restore(value);
        self.redact_as(category, value, &restored)
    }

    /// [`Call::redact`] of a configured term as written in the text, under the placeholder
    /// of its composed (NFC) form: a name typed with decomposed accents gets the same
    /// placeholder as the same name composed. Text already composed is its own key.
    pub(super) fn redact_composed(&mut self, category: Category, value: &str) -> String {
        use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfc_quick};
        if value.is_ascii() || is_nfc_quick(value.chars()) == IsNormalized::Yes {
            return self.redact(category, value);
        }
        let composed: String = value.nfc().collect();
        self.redact_as(category, value, &composed)
    }

    /// Redacts `value` under the placeholder of `key`.
    fn redact_as(&mut self, category: Category, value: &str, key: &str) -> String {
        self.counts.add(category, 1);
        let placeholder = self.engine.placeholder(category, key);
        if let Some(record) = self.record.as_deref_mut() {
            // A value can span markers of earlier stages: record it as the text shows it.
            let raw = self.markers.restore(value);
            self.engine
                .record(record, category, key, &placeholder, &raw);
        }
        let mut marker = self.markers.stash_for(placeholder, value);
        if self.preserve {
            let breaks = line_breaks(value);
            self.kept_line_breaks |= !breaks.is_empty();
            marker.push_str(&breaks);
            self.markers.set_trailer(breaks.len());
        }
        marker
    }

    /// Protects `value` verbatim from every later stage.
    pub(super) fn protect(&mut self, value: &str) -> String {
        self.markers.stash(value)
    }
}

/// The text between stages, with its word-class [`shadow`] kept in step: stages that
/// change a few words splice the shadow instead of shadowing the whole text again.
pub(super) struct Working {
    pub(super) text: String,
    pub(super) shadow: Shadow,
    /// The text lowercased, as [`FindCache::ascii_lower`]: literal-gated stages in a
    /// row (salt and secret assignments, configured terms) share it while none
    /// changes the text.
    pub(super) ascii_lower: Option<Option<String>>,
    /// Where the literal-gated stages' literals start, from the detector layer's scan.
    pub(super) starts: LiteralStarts,
    /// The text was ASCII when the pipeline began (its shadow then stays ASCII).
    pub(super) ascii_source: bool,
}

/// Which of the [`LiteralStarts`] lists a stage takes its candidates from.
#[derive(Clone, Copy, Debug)]
pub(super) enum StartList {
    /// The secret gate literals: `generic_secret`, `provider_tokens`.
    Secret,
    /// The configured terms' first words: the terms stages.
    Terms,
    /// The allow list's first words: the allow stage.
    Allow,
}

/// Where the literal-gated stages' literals start in the text (see
/// [`FindCache::literal_starts`]), as the detector layer's scan found them and moved
/// through every rewrite since ([`Splicer::move_starts`]); a list that cannot be moved
/// is dropped and its stages search for themselves.
#[derive(Default)]
pub(super) struct LiteralStarts {
    pub(super) secret: Option<Vec<usize>>,
    pub(super) terms: Option<Vec<usize>>,
    pub(super) allow: Option<Vec<usize>>,
}

impl LiteralStarts {
    pub(super) fn list(&mut self, which: StartList) -> &mut Option<Vec<usize>> {
        match which {
            StartList::Secret => &mut self.secret,
            StartList::Terms => &mut self.terms,
            StartList::Allow => &mut self.allow,
        }
    }

    /// Moves the lists to the text `splicer` rewrites.
    pub(super) fn move_through(&mut self, splicer: &Splicer<'_>) {
        for list in [&mut self.secret, &mut self.terms, &mut self.allow] {
            if let Some(starts) = list
                && !splicer.move_starts(starts)
            {
                *list = None;
            }
        }
    }
}

/// What is known of the shadow of [`Working::text`].
pub(super) enum Shadow {
    /// The text is ASCII: it is its own shadow.
    Ascii,
    Known(String),
    Unknown,
}

impl Working {
    pub(super) fn new(text: String) -> Working {
        let ascii_source = text.is_ascii();
        Working {
            text,
            shadow: if ascii_source {
                Shadow::Ascii
            } else {
                Shadow::Unknown
            },
            ascii_lower: None,
            starts: LiteralStarts::default(),
            ascii_source,
        }
    }

    /// The shadow, when known without computing it.
    pub(super) fn known_shadow(&self) -> Option<&str> {
        match &self.shadow {
            Shadow::Ascii => Some(&self.text),
            Shadow::Known(s) => Some(s),
            Shadow::Unknown => None,
        }
    }

    /// What a `\b` pattern must search: the text itself when it is ASCII, else its
    /// shadow (computed now if unknown).
    pub(super) fn boundary_hay(&mut self) -> &str {
        if let Shadow::Unknown = self.shadow {
            self.shadow = Shadow::Known(shadow(&self.text));
        }
        self.known_shadow().expect("shadow just made known")
    }

    /// One stage: every match of `finder` becomes `replace(match)`.
    pub(super) fn apply<F: Finder + ?Sized>(
        &mut self,
        finder: &F,
        mut replace: impl FnMut(&str) -> String,
    ) {
        self.apply_at(finder, |_, m| replace(m));
    }

    /// As [`Working::apply`], `replace` also getting each match's start.
    pub(super) fn apply_at<F: Finder + ?Sized>(
        &mut self,
        finder: &F,
        replace: impl FnMut(usize, &str) -> String,
    ) {
        self.substitute(finder, None, replace);
    }

    /// One baseline stage (see [`Stage::starts_from_scan`]).
    pub(super) fn apply_stage(&mut self, stage: &Stage, mut replace: impl FnMut(&str) -> String) {
        let literals = stage.starts_from_scan.then_some(StartList::Secret);
        self.substitute(&*stage.finder, literals, |_, m| replace(m));
    }

    /// Every match of `finder` becomes `replace(start, match)`; with `literals`, the
    /// finder (a [`LiteralGated`]) is given that list of known starts.
    pub(super) fn substitute<F: Finder + ?Sized>(
        &mut self,
        finder: &F,
        literals: Option<StartList>,
        replace: impl FnMut(usize, &str) -> String,
    ) {
        if finder.uses_word_boundary() {
            self.boundary_hay();
        }
        let mut starts = std::mem::take(&mut self.starts);
        let mut cache = FindCache {
            ascii_lower: self.ascii_lower.take(),
            literal_starts: literals.and_then(|which| starts.list(which).take()),
            ..FindCache::default()
        };
        if self.ascii_source && finder.uses_word_boundary() {
            // The shadow of an ASCII text stays ASCII through every rewrite (markers
            // become `\x07` bytes): the windowed search has no non-ASCII to look for.
            cache.non_ascii = Some((0, usize::MAX));
        }
        let hay = if finder.uses_word_boundary() {
            self.known_shadow().expect("boundary hay made known")
        } else {
            &self.text
        };
        let mut splicer = Splicer::new(&self.text, self.known_shadow());
        substitute_into(finder, hay, &mut splicer, &mut cache, replace);
        if let Some(which) = literals {
            *starts.list(which) = cache.literal_starts.take();
        }
        starts.move_through(&splicer);
        match splicer.finish() {
            Some((text, shadow)) => {
                self.text = text;
                self.shadow = shadow.map_or(Shadow::Unknown, Shadow::Known);
            }
            // Unchanged text: what the finders learnt of it still holds.
            None => self.ascii_lower = cache.ascii_lower,
        }
        self.starts = starts;
    }

    /// A literal-gated stage whose own scan for its literals would cost more than its
    /// pattern's search (the allow list's): it starts from the known starts when the
    /// detector layer's keyword pass listed them, else the plain pattern searches.
    pub(super) fn substitute_at_known_starts(
        &mut self,
        gated: &LiteralGated,
        which: StartList,
        replace: impl FnMut(usize, &str) -> String,
    ) {
        if self.starts.list(which).is_some() {
            self.substitute(gated, Some(which), replace);
        } else {
            self.substitute(&gated.inner, None, replace);
        }
    }

    /// A stage that rewrites the text through a splicer, searching the boundary hay.
    pub(super) fn splice(&mut self, f: impl FnOnce(&str, &mut Splicer<'_>)) {
        self.boundary_hay();
        let hay = self.known_shadow().expect("boundary hay made known");
        let mut splicer = Splicer::new(&self.text, Some(hay));
        f(hay, &mut splicer);
        if let Some((text, shadow)) = splicer.finish() {
            self.text = text;
            self.shadow = shadow.map_or(Shadow::Unknown, Shadow::Known);
            self.ascii_lower = None;
            self.starts = LiteralStarts::default();
        }
    }

    /// A stage that rewrites the text by other means.
    pub(super) fn set(&mut self, text: String) {
        self.text = text;
        self.shadow = Shadow::Unknown;
        self.ascii_lower = None;
        self.starts = LiteralStarts::default();
    }
}
