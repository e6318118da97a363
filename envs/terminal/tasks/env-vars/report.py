"""Writes a report for the user and level given in the environment."""
import hashlib
import os
import sys

user = os.environ.get("REPORT_USER")
level = os.environ.get("REPORT_LEVEL")
if not user or not level:
    sys.exit("report.py: set REPORT_USER and REPORT_LEVEL")
digest = hashlib.sha256(f"{user}:{level}".encode()).hexdigest()[:16]
with open("/app/report.txt", "w") as f:
    f.write(f"user={user}\nlevel={level}\ndigest={digest}\n")
print("wrote /app/report.txt")
