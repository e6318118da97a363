package client

// Test hooks, for the client_test package.

// DropConn closes the current connection's socket under the client, as a
// network failure would.
func DropConn(c *Client) {
	c.mu.Lock()
	cn := c.conn
	c.mu.Unlock()
	if cn != nil {
		cn.ws.NetConn().Close()
	}
}

// DropResponse makes the client lose the next answer to a call of method:
// the connection breaks instead of delivering it, after the server has
// done the work.
func DropResponse(c *Client, method string) {
	c.mu.Lock()
	c.dropResponse = method
	c.mu.Unlock()
}

// Generation returns how many connections the client has made.
func Generation(c *Client) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// Connected reports whether the client has a connection now.
func Connected(c *Client) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conn != nil
}

// Pending returns the number of calls waiting for an answer.
func Pending(c *Client) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// WSURL exposes URL normalization.
var WSURL = wsURL
