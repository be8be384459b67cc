// Package layers holds no code: its test keeps the layers apart. Data flows
// config → upstream → gateway → surfaces, and the surfaces and the
// operator API see the upstream connections only through the gateway.
package layers
