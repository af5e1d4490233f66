#!/usr/bin/env bash
# Restores the raw archives of earlier GPU runs (docs/gpu-runs/ARCHIVE.tsv)
# from the repository's history into the working tree, checking each
# against its recorded SHA-256. The tracked tree keeps each run's summary
# and its verdicts (docs/gpu-runs/README.md); the raw tarballs stay in the
# commit named in ARCHIVE.tsv, so that a checkout travels to a GPU machine as
# it is. Restored files are ignored by git (.gitignore).
#
#   bash scripts/gpu-evidence.sh [--list] [GLOB...]
#
# With no GLOB, every archive; a GLOB matches paths (e.g. '*/issue12h/*').
# Needs a clone with history (not --depth 1). Exit status 1 when an archive
# cannot be read or does not match its SHA-256.
set -euo pipefail
cd "$(dirname "$0")/.."
index=docs/gpu-runs/ARCHIVE.tsv
list=0
if [ "${1:-}" = --list ]; then list=1; shift; fi
[ $# -gt 0 ] || set -- '*'
status=0
while IFS=$'\t' read -r path bytes sha commit; do
	[ "$path" = path ] && continue
	matched=0
	for glob in "$@"; do
		# shellcheck disable=SC2053 # the glob is meant to match
		[[ $path == $glob ]] && matched=1
	done
	[ $matched = 1 ] || continue
	if [ $list = 1 ]; then
		printf '%s\t%s bytes\n' "$path" "$bytes"
		continue
	fi
	if ! git cat-file -e "$commit:$path" 2>/dev/null; then
		echo "gpu-evidence: '$path' is not in commit $commit (a shallow clone?)" >&2
		status=1
		continue
	fi
	git show "$commit:$path" > "$path.part"
	got=$(sha256sum "$path.part" | cut -d' ' -f1)
	if [ "$got" != "$sha" ]; then
		echo "gpu-evidence: '$path' has sha256 $got, not $sha" >&2
		rm -f "$path.part"
		status=1
		continue
	fi
	mv "$path.part" "$path"
	echo "$path"
done < "$index"
exit $status
