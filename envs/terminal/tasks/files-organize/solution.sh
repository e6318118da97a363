#!/bin/bash
set -e
cd /app/inbox
for f in *; do
	[ -f "$f" ] || continue
	case "$f" in
	*.*) ext="${f##*.}" ;;
	*) ext=other ;;
	esac
	mkdir -p "$ext"
	mv "$f" "$ext/"
done
