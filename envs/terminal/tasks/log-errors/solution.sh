#!/bin/bash
set -e
export LC_ALL=C
awk '$9 ~ /^5/ {print $1}' /app/access.log | sort | uniq -c | sort -k1,1nr -k2,2 |
	awk '{print $2}' > /app/bad_ips.txt
