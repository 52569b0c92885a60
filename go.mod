module github.com/seed64e23a5c/timingwheel

go 1.25.0

toolchain go1.26.8

require (
	github.com/benbjohnson/clock v1.3.5
	github.com/robfig/cron/v3 v3.0.1
	github.com/stretchr/testify v1.12.1
	go.etcd.io/bbolt v1.5.0
	go.uber.org/goleak v1.3.0
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.45.0 // indirect
)
