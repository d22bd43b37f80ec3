-- A workflow version lists the files its source was built from: a JavaScript or
-- TypeScript workflow that imports modules or packages is stored as one bundle, and the
-- manifest says which files, by path relative to the entry file's directory, SHA-256
-- and size, as JSON. Versions stored before have none (NULL).
ALTER TABLE workflow_versions ADD COLUMN manifest TEXT;
