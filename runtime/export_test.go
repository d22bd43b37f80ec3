package runtime

// ConsumerGroups exposes consumerGroups to the tests.
var ConsumerGroups = consumerGroups
