package main

import (
	"fmt"

	"example.com/shapes/shapes"
)

func main() {
	fmt.Println(shapes.Total([]shapes.Shape{shapes.Circle{R: shapes.Unit}, &shapes.Square{Side: 2}}))
}
