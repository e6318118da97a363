#!/bin/bash
set -e
# nohup and a new session keep the job alive when the shell goes away.
setsid nohup bash -c 'echo $$ > /app/heartbeat.pid; while :; do date +%s >> /app/heartbeat.log; sleep 1; done' \
	> /dev/null 2>&1 < /dev/null &
for _ in $(seq 50); do
	[ -s /app/heartbeat.log ] && [ -s /app/heartbeat.pid ] && break
	sleep 0.1
done
cat /app/heartbeat.pid
