// DNC integration tests
