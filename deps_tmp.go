package main
import (
_ "github.com/gorilla/websocket"
_ "modernc.org/sqlite"
_ "github.com/spf13/cobra"
_ "github.com/prometheus/client_golang/prometheus"
_ "sigs.k8s.io/yaml"
_ "github.com/santhosh-tekuri/jsonschema/v6"
)
func main(){}
