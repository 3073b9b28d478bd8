// Package modelcatalog answers model/list from the configuration: which
// models a client is offered, with their reasoning efforts and which one
// is the default. It knows no thread; session supplies the provider
// modelProvider/default/set chose.
package modelcatalog
