#!/bin/bash
set -e
cd /app/repo
deleted_in=$(git rev-list -n 1 HEAD -- secret.txt)
git checkout "$deleted_in^" -- secret.txt
git commit -qm "Restore secret.txt"
