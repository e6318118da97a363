#!/bin/bash
set -e
mkdir -p /app/restored
tar -xzf /app/backup.tar.gz -C /app/restored
cd /app/restored
find . -type f -name '*.log' | sed 's|^\./||' | sort | tar -czf /app/logs.tar.gz -T -
