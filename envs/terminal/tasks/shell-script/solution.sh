#!/bin/bash
set -e
mkdir -p /app/bin
cat > /app/bin/countlines <<'SH'
#!/bin/bash
if [ $# -ne 1 ]; then
	echo "usage: countlines DIR" >&2
	exit 2
fi
find "$1" -type f -name '*.txt' -print0 | xargs -0 -r cat | wc -l
SH
chmod +x /app/bin/countlines
