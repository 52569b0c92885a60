package mysqltest

import (
	"net"
	"time"
)

// dialSocket connects to the unix socket path, to see whether the server
// accepts connections.
func dialSocket(path string) (net.Conn, error) {
	return net.DialTimeout("unix", path, time.Second)
}
