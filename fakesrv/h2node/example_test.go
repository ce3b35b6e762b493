package h2node_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"

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
	// The connections that carried streams: net/http may dial one more on a busy machine, when
	// the first stream's end is still being processed as the second call starts, and leave it
	// unused.
	st := node.Stats()
	var carried []int
	for _, n := range st.Streams {
		if n > 0 {
			carried = append(carried, n)
		}
	}
	fmt.Printf("streams per connection used %v, statuses %v\n", carried, st.Statuses)
	// Output:
	// HTTP/2.0 400 {"reason":"BadDeviceToken"}
	// HTTP/2.0 200 ok
	//
	// streams per connection used [2], statuses map[200:1 400:1]
}

// Two nodes on 127.0.0.1 and 127.0.0.2, one port, and their control API: node 2 frozen, as
// POST /freeze?node=2 would.
func ExampleNewCluster() {
	ips := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2")}
	c, err := h2node.NewCluster(ips, "0", [][]h2node.Option{nil, nil})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	c.Freeze(1)
	_, port1, _ := net.SplitHostPort(c.Nodes[0].Addr)
	_, port2, _ := net.SplitHostPort(c.Nodes[1].Addr)
	fmt.Println("one port:", port1 == port2)
	for _, st := range c.Stats() {
		fmt.Printf("node %d frozen %v, %d connections\n", st.Node, st.Frozen, st.Connections)
	}
	// Output:
	// one port: true
	// node 1 frozen false, 0 connections
	// node 2 frozen true, 0 connections
}
