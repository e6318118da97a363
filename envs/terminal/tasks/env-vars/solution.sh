#!/bin/bash
set -e
export REPORT_USER=alice REPORT_LEVEL=3
python3 /app/report.py
printf 'export REPORT_USER=alice\nexport REPORT_LEVEL=3\n' > /app/report.env
