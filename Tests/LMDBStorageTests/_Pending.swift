// The tests of this module land with the module itself.
