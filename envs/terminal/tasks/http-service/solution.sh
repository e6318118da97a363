#!/bin/bash
set -e
echo ok > /app/site/health.txt
cat > /app/serve.sh <<'SCRIPT'
#!/bin/bash
cd /app/site
setsid nohup python3 -m http.server 8000 --bind 127.0.0.1 > /dev/null 2>&1 < /dev/null &
for _ in $(seq 100); do
	python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:8000/health.txt", timeout=1)' 2>/dev/null && exit 0
	sleep 0.1
done
echo "the server did not come up" >&2
exit 1
SCRIPT
chmod +x /app/serve.sh
