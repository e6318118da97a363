#!/bin/bash
head -n 1 /app/greeting.txt > /app/out.txt
