// Package verbs implements the hub's verbs (fs.*, proc.run, sys.machineInfo)
// and the workspace they act in: every path is confined to the workspace root
// through os.Root and the path guards of DESIGN §8.
package verbs
