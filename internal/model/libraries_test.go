package model

import "github.com/labrun/labrun/internal/rules"

// The libraries the model's tests name, by the rules they follow at their defaults.
type Profile = rules.Rules

var (
	HC5           = rules.HC5(rules.HC5Settings{})
	OkHttp        = rules.OkHttp313(rules.OkHttpSettings{})
	Go            = rules.GoNet()
	JDK           = rules.JDK(rules.JDKSettings{})
	URLConnection = rules.URLConnection(rules.URLConnectionSettings{})
	HC4           = rules.HC4()
)
