#!/bin/bash
set -e
cd /app
sed -i '/^\[server\]/,/^\[/{s/^port *=.*/port = 9090/;s/^debug *=.*/debug = false/}' app.ini
if ! sed -n '/^\[database\]/,/^\[/p' app.ini | grep -q '^pool_size'; then
	sed -i '/^\[database\]/a pool_size = 20' app.ini
else
	sed -i '/^\[database\]/,/^\[/s/^pool_size *=.*/pool_size = 20/' app.ini
fi
