module example.com/intmath

go 1.22
