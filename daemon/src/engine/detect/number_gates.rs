//! Cheap gates before the card and IBAN regexes, read off one pass over the runs of
//! capitals, digits, spaces and hyphens.

use crate::engine::prepass::byteclass::{ByteClass, run_extent};

/// Cheap gates before the card and IBAN regexes: whether a text holds their shapes,
/// read off the runs of ASCII capitals, digits, spaces and hyphens (every shape lies in
/// such a run).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CardAndIbanGates {
    /// 13 ASCII digits in a row, a single space or hyphen allowed between two digits
    /// (the shape of a card number).
    pub card: bool,
    /// 13 ASCII digits with only spaces and hyphens, any number of them, between: the
    /// shape of the baseline's card pattern (`(?:\d[ -]*?){13,19}`) in ASCII.
    pub loose_card: bool,
    /// A run of at least 12 capitals, digits and spaces (country, check digits and two
    /// groups of four, spaces allowed between groups) with two capitals and two digits
    /// at its start or after a space, 12 bytes or more before its end.
    pub iban: bool,
}

/// ASCII capitals, digits and the separators of both shapes: every card number and
/// IBAN the gates pass lies in a run of these bytes.
const CARD_IBAN_CLASS: ByteClass = ByteClass::new(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -", false);

impl CardAndIbanGates {
    /// Both gates passed: no run can change them.
    pub fn settled(&self) -> bool {
        self.card && self.iban
    }

    /// Adds the gates of the run of [`CARD_IBAN_CLASS`] bytes around the ASCII digit
    /// `b[i]`; returns where the run ends. Every shape holds an ASCII digit, so the runs
    /// around the digits of a text are all the runs that can pass (the run around a
    /// digit of a run read already is that run).
    pub fn add_run_around(&mut self, b: &[u8], i: usize) -> usize {
        let (start, end) = run_extent(b, i, 0, |c| CARD_IBAN_CLASS.has(c));
        self.add_run(b, start, end);
        end
    }

    /// Adds the gates of the maximal run `b[s..e]` of [`CARD_IBAN_CLASS`] bytes.
    fn add_run(&mut self, b: &[u8], s: usize, e: usize) {
        if e - s < IBAN_MIN {
            return;
        }
        if !self.card {
            let (card, loose) = card_chains(&b[s..e]);
            self.card = card;
            self.loose_card |= loose;
        }
        self.iban = self.iban || has_iban_head(b, s, e);
    }
}

/// The card and IBAN gates of `text` by their definition: every run of
/// [`CARD_IBAN_CLASS`] bytes long enough to hold either shape. The detector reads only
/// the runs around digits ([`CardAndIbanGates::add_run_around`], from its one pass over
/// the text's separators); the tests check both agree.
#[cfg(test)]
pub fn card_and_iban_gates(text: &str) -> CardAndIbanGates {
    let b = text.as_bytes();
    let mut found = CardAndIbanGates::default();
    for (s, e) in crate::engine::prepass::byteclass::class_runs(b, 0, IBAN_MIN, &CARD_IBAN_CLASS) {
        found.add_run(b, s, e);
        if found.settled() {
            break;
        }
    }
    found
}

/// Fewest bytes of an IBAN's start: country, check digits, two groups of four.
const IBAN_MIN: usize = 12;

/// Whether `run` holds 13 ASCII digits in a row with at most one space or hyphen between
/// two of them, and whether it holds 13 with any spaces and hyphens between them (a
/// capital ends either row). The first implies the second.
fn card_chains(run: &[u8]) -> (bool, bool) {
    const DIGITS: usize = 13;
    let (mut tight, mut loose, mut loose_found) = (0, 0, false);
    let mut after_digit = false;
    for &c in run {
        if c.is_ascii_digit() {
            tight += 1;
            loose += 1;
            if tight >= DIGITS {
                return (true, true);
            }
            loose_found |= loose >= DIGITS;
            after_digit = true;
        } else if matches!(c, b' ' | b'-') {
            if !after_digit {
                tight = 0;
            }
            after_digit = false;
        } else {
            (tight, loose) = (0, 0);
            after_digit = false;
        }
    }
    (false, loose_found)
}

/// Whether `b[s..e]` holds an IBAN's head: in a stretch without hyphens of at least
/// [`IBAN_MIN`] bytes, two capitals and two digits at the stretch's start or after a
/// space, [`IBAN_MIN`] bytes or more before the stretch's end.
fn has_iban_head(b: &[u8], s: usize, e: usize) -> bool {
    let head = |p: usize| {
        b[p].is_ascii_uppercase()
            && b[p + 1].is_ascii_uppercase()
            && b[p + 2].is_ascii_digit()
            && b[p + 3].is_ascii_digit()
    };
    let mut from = s;
    for end in (s..e).filter(|&i| b[i] == b'-').chain([e]) {
        if end >= from + IBAN_MIN
            && (from..=end - IBAN_MIN).any(|p| (p == from || b[p - 1] == b' ') && head(p))
        {
            return true;
        }
        from = end + 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::prepass::byteclass::class_runs;

    /// The card gate as a byte loop: `min` digits in a row, one space or hyphen allowed
    /// between two digits.
    fn digit_run_loop(text: &str, min: usize) -> bool {
        let mut count = 0;
        let mut after_digit = false;
        for &b in text.as_bytes() {
            if b.is_ascii_digit() {
                count += 1;
                if count >= min {
                    return true;
                }
                after_digit = true;
            } else if after_digit && (b == b' ' || b == b'-') {
                after_digit = false;
            } else {
                count = 0;
                after_digit = false;
            }
        }
        false
    }

    /// The IBAN gate as it was when it had its own pass over runs of capitals, digits
    /// and spaces.
    fn iban_start_own_pass(text: &str) -> bool {
        const CLASS: ByteClass = ByteClass::new(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ", false);
        let b = text.as_bytes();
        let head = |p: usize| {
            b[p].is_ascii_uppercase()
                && b[p + 1].is_ascii_uppercase()
                && b[p + 2].is_ascii_digit()
                && b[p + 3].is_ascii_digit()
        };
        class_runs(b, 0, 12, &CLASS)
            .any(|(s, e)| (s..=e - 12).any(|p| (p == s || b[p - 1] == b' ') && head(p)))
    }

    /// The card and IBAN gates never say no where their regex would match, and answer as
    /// the byte loop and the separate IBAN pass they replaced.
    #[test]
    fn card_and_iban_gates_pass_every_match() {
        let card = regex::Regex::new(r"\d(?:[ \-]?\d){12,18}").unwrap();
        let loose_card = regex::Regex::new(r"[0-9](?:[ \-]*[0-9]){12}").unwrap();
        let iban = regex::Regex::new(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}").unwrap();
        let iban_head = regex::Regex::new(r"(?:^|[^A-Z0-9])[A-Z]{2}[0-9]{2}").unwrap();
        let (mut ibans, mut heads_refused, mut loose_cards) = (0, 0, 0);
        let pieces = [
            "4",
            "12",
            "DE",
            "89",
            " ",
            "-",
            "--",
            "x",
            "GB",
            "0000",
            "a",
            "\u{663}",
            "\n",
            "1234567",
            " -",
            "_",
            "\u{c4}",
            "Q",
            "ABCD",
            "DE89 3704",
            "  ",
        ];
        let mut state = 9u64;
        for _ in 0..5000 {
            let mut text = String::new();
            for _ in 0..14 {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                text.push_str(pieces[(state >> 33) as usize % pieces.len()]);
            }
            // The regexes read Unicode digits too; the gates, like the loops before them,
            // only ASCII ones.
            let gates = card_and_iban_gates(&text);
            if card.is_match(&text) && text.is_ascii() {
                assert!(gates.card, "{text:?}");
            }
            assert_eq!(gates.card, digit_run_loop(&text, 13), "{text:?}");
            // The baseline's card shape: every match in an ASCII text passes, and the
            // gate passes nothing else.
            let baseline_card = loose_card.is_match(&text);
            if text.is_ascii() {
                assert_eq!(gates.loose_card, baseline_card, "{text:?}");
                loose_cards += usize::from(baseline_card && !gates.card);
            }
            if iban.is_match(&text) && text.is_ascii() {
                assert!(gates.iban, "{text:?}");
                ibans += 1;
            }
            // The gate never passes without an IBAN's head and length.
            assert_eq!(gates.iban, iban_start_own_pass(&text), "{text:?}");
            if gates.iban {
                assert!(iban_head.is_match(&text), "{text:?}");
            } else if iban_head.is_match(&text) {
                heads_refused += 1;
            }
        }
        assert!(ibans > 50 && heads_refused > 50, "{ibans} {heads_refused}");
        assert!(
            loose_cards > 30,
            "{loose_cards} texts with only the baseline's card shape"
        );
    }
}
