#!/bin/bash
set -e
cat > /app/start-heartbeat.sh <<'SCRIPT'
#!/bin/bash
# nohup and a new session keep the job alive when the shell goes away.
setsid nohup bash -c 'echo $$ > /app/heartbeat.pid; while :; do date +%s >> /app/heartbeat.log; sleep 1; done' \
	> /dev/null 2>&1 < /dev/null &
SCRIPT
chmod +x /app/start-heartbeat.sh
