#!/bin/bash
python -c "import sys; sys.stdout.write(open('data.txt').read().upper())" > out.txt
