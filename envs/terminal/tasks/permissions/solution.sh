#!/bin/bash
set -e
cd /app/site
chmod 750 bin/deploy.sh
chmod 600 secrets/key.txt
chmod 700 secrets
find public -type f -exec chmod 644 {} +
