module github.com/seed64e23a5c/timingwheel

go 1.26.8

require github.com/benbjohnson/clock v1.3.5
