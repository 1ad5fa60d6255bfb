// Command etcd is the etcd server, built from go.etcd.io/etcd/server/v3 so
// the kube-apiserver sandbox needs no downloaded release binaries.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
