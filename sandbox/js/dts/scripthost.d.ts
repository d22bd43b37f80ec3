// Declarations of the scripthost JavaScript sandbox: phase inputs and built-in tools.
declare const __state__: unknown;
declare const __prepared__: unknown;
declare const __mutationResult__: unknown;
