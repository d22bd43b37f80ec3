// Package shapes computes areas.
package shapes

import "math"

// Shape has an area.
type Shape interface {
	Area() float64
}

// Circle is a round shape.
type Circle struct {
	R float64
}

// Area of the circle.
func (c Circle) Area() float64 {
	return math.Pi * c.R * c.R
}

// Square is a shape with four equal sides.
type Square struct {
	Side float64
}

// Area of the square.
func (s *Square) Area() float64 {
	return s.Side * s.Side
}

// Total adds the areas of shapes.
func Total(shapes []Shape) float64 {
	var sum float64
	for _, s := range shapes {
		sum += s.Area()
	}
	return sum
}

const Unit = 1.0
