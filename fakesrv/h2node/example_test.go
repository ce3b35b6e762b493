package h2node_test

import (
	"fmt"
	"io"
	"net/http"

	"github.com/labrun/labrun/fakesrv/h2node"
)

// A node on a second loopback address, advertising 2 concurrent streams, answering a
// rejected notification and a good one; net/http's own client speaks h2c to it.
func ExampleNew() {
	node, err := h2node.New(h2node.WithAddr("127.0.0.2:0"), h2node.WithMaxStreams(2))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer node.Close()
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &protos}
	defer tr.CloseIdleConnections()
	for _, path := range []string{"/3/device/bad?status=400", "/3/device/good"} {
		resp, err := (&http.Client{Transport: tr}).Get(node.URL + path)
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%s %d %s\n", resp.Proto, resp.StatusCode, body)
	}
	st := node.Stats()
	fmt.Printf("connections %d, streams per connection %v, statuses %v\n", st.Conns, st.Streams, st.Statuses)
	// Output:
	// HTTP/2.0 400 {"reason":"BadDeviceToken"}
	// HTTP/2.0 200 ok
	//
	// connections 1, streams per connection [2], statuses map[200:1 400:1]
}
