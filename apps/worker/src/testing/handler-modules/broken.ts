// Fails while loading, as a module with a bad import or a throwing top level does.
throw new Error("the handler module's top level failed");
