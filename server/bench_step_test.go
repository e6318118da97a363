package server

// stepFrame runs one frame holding one request as dispatch and a worker do,
// on the calling goroutine, and returns its response.
func stepFrame(c *conn, frame []byte) []byte {
	items, _ := decodeFrame(nil, frame)
	laneKey(items[0].req)
	return c.handle(items[0].req, items[0].err)
}
