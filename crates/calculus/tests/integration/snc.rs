// SNC integration tests
