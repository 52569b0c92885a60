//go:build !twqinspect

package main

import "errors"

// errNoInspection is what get and list report until package durable has
// Queue.Get and Queue.List: inspect.go, built with -tags twqinspect, has
// them.
var errNoInspection = errors.New("get and list need durable's Queue.Get and Queue.List, which this build of twq lacks (build it with -tags twqinspect once package durable has them)")

func parseGet(string, []string, *options) (action, error) { return nil, errNoInspection }

func parseList(string, []string, *options) (action, error) { return nil, errNoInspection }
