module github.com/labrun/labrun/examples

go 1.26.0

require (
	github.com/aws/aws-sdk-go-v2 v1.48.0
	github.com/aws/smithy-go v1.28.9
	github.com/cristalhq/hedgedhttp v0.9.2
	github.com/go-resty/resty/v2 v2.17.2
	github.com/hashicorp/go-retryablehttp v0.7.8
	github.com/labrun/labrun v0.0.0
	github.com/sony/gobreaker/v2 v2.4.0
	google.golang.org/grpc v1.85.0
)

require (
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

// labrun is not on the public module proxy yet: the examples use the repository they sit in.
// A project of your own does the same with the path of its clone (see docs/labtest.md).
replace github.com/labrun/labrun => ../
