package labtest_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/labrun/labrun/labtest"
)

// A business retry after a timeout charges the server twice: the client gives up after
// 150 ms, the server takes 400 ms and reserves on arrival.
func ExampleLab_Run() {
	lab, err := labtest.New()
	if err != nil {
		panic(err)
	}
	defer lab.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 150 * time.Millisecond}
	retryOnce := labtest.DoerFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := client.Do(req)
		if err != nil {
			req.Body, _ = req.GetBody()
			resp, err = client.Do(req)
		}
		return resp, err
	})
	row := lab.Run(context.Background(), retryOnce, labtest.Reserve(400*time.Millisecond),
		labtest.Limits{AttemptTimeout: 150 * time.Millisecond, Retries: 1})
	fmt.Println("outcome:", row.Outcome)
	fmt.Println("reservations:", row.Executions, "model:", row.Expected.Executions)
	// Output:
	// outcome: deadline
	// reservations: 2 model: 2
}

// The read timeout of net/http's Transport covers only the head: a trickle goes through.
func ExampleTrickle() {
	lab, err := labtest.New()
	if err != nil {
		panic(err)
	}
	defer lab.Close()
	tr := &http.Transport{ResponseHeaderTimeout: 100 * time.Millisecond}
	defer tr.CloseIdleConnections()
	row := lab.Run(context.Background(), &http.Client{Transport: tr}, labtest.Trickle(3, 80*time.Millisecond),
		labtest.Limits{HeaderTimeout: 100 * time.Millisecond})
	fmt.Println(row.Outcome, row.Expected.Outcome)
	// Output: ok ok
}
