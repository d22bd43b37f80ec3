package plan_test

import (
	"fmt"

	"github.com/scripthost/scripthost/plan"
)

func ExampleToolName() {
	fmt.Println(plan.ToolName("file_read"))
	fmt.Println(plan.ToolName("Files.move"))
	// Output:
	// plan file_read
	// Files move
}

func ExampleExecutionID() {
	fmt.Println(plan.ExecutionID("tidy", 3, ""))
	fmt.Println(plan.ExecutionID("tidy", 3, "write-index"))
	// Output:
	// tidy/3
	// tidy/3/write-index
}

func ExampleParse() {
	p, err := plan.Parse([]byte(`{"plan_id":"p","intent":"x","steps":[{"step_id":"a","tool":"file_read","arguments":{"path":"a.txt"}}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	// Reformatting the document keeps its hash: it is taken over canonical JSON.
	q, _ := plan.Parse([]byte("{\n  \"steps\": [{\"arguments\": {\"path\": \"a.txt\"}, \"tool\": \"file_read\", \"step_id\": \"a\"}],\n  \"intent\": \"x\", \"plan_id\": \"p\"\n}"))
	fmt.Println(p.Hash() == q.Hash())
	_, err = plan.Parse([]byte(`{"plan_id":"p","intent":"x","steps":[]}`))
	fmt.Println(plan.CodeOf(err))
	// Output:
	// true
	// E001
}
