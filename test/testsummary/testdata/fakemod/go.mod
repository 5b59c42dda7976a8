module tsfake
go 1.26
