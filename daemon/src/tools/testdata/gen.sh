#!/usr/bin/env bash
# Regenerates the tool goldens from the reference oracle (redacted-context-mcp 0.10.1).
# Usage: REF=/tmp/refvenv/bin/redctx bash gen.sh   (writes ./golden/*.out next to this file)
# The corpora hold nothing the reference redacts in balanced mode (names from its path
# allow list, lowercase prose), so the goldens do not depend on the redaction pipeline.
# The same corpora are built in memory by `tools/tests.rs`; keep the two in sync.
set -u
REF=${REF:-/tmp/refvenv/bin/redctx}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export REDACTED_CONTEXT_SALT=golden-salt REDACTED_CONTEXT_STATE_DIR="$WORK/state"
printf '[redaction]\n' > "$WORK/empty.toml"
OUT="$HERE/golden"
rm -rf "$OUT" && mkdir -p "$OUT"

# Corpus A: listing, reading, searching, bundling.
A="$WORK/a/kb"
mkdir -p "$A/docs" "$A/notes" "$A/tools/internal"
printf 'alpha line one\nbeta line two\n\ngamma line four\n' > "$A/docs/readme.md"
printf 'design notes\nthe backup runs nightly\nrecovery drills happen monthly\n' > "$A/docs/design.md"
printf 'todo: write more tests\nno newline at end' > "$A/notes/meeting.md"
printf '' > "$A/notes/draft.md"
printf 'bin\000ary' > "$A/docs/archive"
printf 'x = 1\r\ny = 2\r\n' > "$A/tools/build.py"
printf 'def main():\n    return 1\n' > "$A/tools/internal/model.py"

# Corpus B: retrieval (spec 17's shape, with file names and words nothing redacts).
B="$WORK/b/kb"
mkdir -p "$B/docs" "$B/notes"
printf '# design runbook\n\nthe nightly database backup runs at two.\nrecovery drills happen monthly.\n' > "$B/docs/design.md"
printf 'database recovery\n\nbackup procedures for the database\ncontact the operator\n' > "$B/docs/manual.md"
{ for _ in $(seq 30); do printf 'unrelated text\n'; done; printf 'backup once\n'; } > "$B/notes/draft.md"
printf 'database database database\n' > "$B/notes/planning.md"

run() { # name root args...
  local name=$1 root=$2; shift 2
  "$REF" --root "$root" --config "$WORK/empty.toml" --mode balanced "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"
  echo "rc=$?" >> "$OUT/$name.err"
}

run tree_default "$A" tree
run tree_depth5 "$A" tree --max-depth 5
run tree_depth0 "$A" tree --max-depth 0
run tree_docs "$A" tree docs
run tree_file "$A" tree docs/readme.md
run ls_root "$A" ls
run ls_docs "$A" ls docs
run ls_file "$A" ls docs/readme.md
run ls_recursive "$A" ls -r .
run ls_recursive_depth1 "$A" ls -r --max-depth 1 .
run ls_recursive_tools "$A" ls -r tools
run ls_entry_limit "$A" ls -r --max-entries 5 .
run cat_crlf_numbered "$A" cat -n tools/build.py
run cat_plain "$A" cat docs/readme.md
run cat_range "$A" cat --start-line 2 --end-line 3 docs/readme.md
run cat_range_past_end "$A" cat --start-line 3 --end-line 9 docs/design.md
run cat_truncated_numbered "$A" cat -n --max-chars 20 docs/readme.md
run cat_no_final_newline "$A" cat notes/meeting.md
run cat_empty "$A" cat notes/draft.md
run cat_end_before_start "$A" cat --start-line 3 --end-line 2 docs/readme.md
run cat_start_beyond_end "$A" cat --start-line 9 docs/readme.md
run cat_binary "$A" cat docs/archive
run cat_dir "$A" cat docs
run cat_missing "$A" cat docs/nope.md
run cat_outside "$A" cat ../x.md
run head_two "$A" head -n 2 docs/design.md
run tail_two "$A" tail -n 2 -n 2 docs/design.md
run tail_numbered "$A" tail -n 1 --line-numbers notes/meeting.md
run tail_empty "$A" tail notes/draft.md
run grep_context "$A" grep -C 1 line
run grep_ignore_case "$A" grep -i LINE
run grep_regex "$A" grep -E 'l[a-z]+e'
run grep_max_results "$A" grep --max-results 3 line
run grep_max_results_exact "$A" grep --max-results 4 line
run grep_glob "$A" grep --glob 'notes/*' e
run grep_scoped "$A" grep e tools docs/design.md tools
run grep_no_match "$A" grep nothing-here
run grep_invalid_regex "$A" grep -E 'a('
run grep_context_overlap "$A" grep -C 1 -E 'alpha|beta'
run stat_file "$A" stat docs/readme.md
run stat_crlf "$A" stat tools/build.py
run stat_binary "$A" stat docs/archive
run stat_no_final_newline "$A" stat notes/meeting.md
run bundle_all "$A" bundle
run bundle_two_files "$A" bundle --max-files 2
run bundle_chars_per_file "$A" bundle --max-chars-per-file 10 docs
run bundle_total_chars "$A" bundle --max-total-chars 50
run bundle_glob "$A" bundle --glob '*.py'
run retrieve_golden "$B" retrieve 'database backup recovery'
run retrieve_scoped "$B" retrieve --glob '*.md' database docs
run retrieve_tight "$B" retrieve --max-results 2 --max-chars 400 database
run retrieve_too_small "$B" retrieve --max-chars 256 'unrelated'
run retrieve_no_match "$B" retrieve 'zebra'
run retrieve_stop_words "$B" retrieve 'the of and'
run retrieve_bounds "$B" retrieve --max-results 51 database
run doctor "$A" doctor
run audit_text "$A" audit
run audit_json "$A" audit --format json
# One symlink, which is also broken (a single link keeps the scan order deterministic).
ln -s nowhere "$A/notes/review.md"
run audit_link_text "$A" audit
run audit_link_json "$A" audit --format json
rm "$A/notes/review.md"

# Corpus C: retrieval passage edge cases (a 4,000-char line, CRLF, non-ASCII words).
C="$WORK/c/kb"
mkdir -p "$C/notes"
python3 -c "
import sys
words = ' '.join(['alpha%d' % i for i in range(400)]) + ' needle ' + 'z' * 1700 + ' needle'
sys.stdout.write('intro needle\n' + words + '\nafter needle\n')
" > "$C/notes/review.md"
printf 'crlf needle one\r\ncrlf two\r\n\r\nstra\303\237e needle\r\n' > "$C/notes/draft.md"
printf 'strasse here\nstra\303\237e there\nthe per\305\277on\n' > "$C/notes/meeting.md"
run retrieve_long_lines "$C" retrieve 'needle'
run retrieve_casefold "$C" retrieve 'STRASSE'
run grep_ascii_prefilter_gate "$C" grep -i 'STRASSE'
run grep_unprefiltered_casefold "$C" grep -i 'PERSON'
run grep_non_ascii_query "$C" grep -i 'STRAßE'
