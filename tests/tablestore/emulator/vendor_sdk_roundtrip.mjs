// The vendor's own TypeScript SDK (typed request classes, its transport with response
// header + signature validation) against the emulator, for all 22 APIs.
const sdk = await import(process.env.MEMCORE_AGENT_STORAGE_SDK + '/dist/src/index.js');
const [endpoint, signVersion, region] = process.argv.slice(2);
const client = new sdk.AgentStorageClient({
  endpoint, instanceName: 'emulator', accessKeyId: 'emu-ak', accessKeySecret: 'emu-sk',
  signVersion: signVersion || 'v2', region,
});
const S1 = { appId: 'app-001', tenantId: 'user-001', agentId: 'assistant', runId: 'session-001' };
const store = 'vendor_check';
const out = {};
async function call(name, fn) {
  try { out[name] = { ok: true, keys: Object.keys(await fn()).sort() }; return out[name]; }
  catch (e) { out[name] = { ok: false, error: String(e), code: e.code, status: e.statusCode }; return out[name]; }
}
let r;
await call('CreateMemoryStore', () => client.createMemoryStore(new sdk.CreateMemoryStoreRequest({ memoryStoreName: store, description: 'd', extractInstructions: 'keep facts', storageMode: 'ots' })));
await call('GetMemoryStore', () => client.getMemoryStore(new sdk.GetMemoryStoreRequest({ memoryStoreName: store })));
await call('UpdateMemoryStore', () => client.updateMemoryStore(new sdk.UpdateMemoryStoreRequest({ memoryStoreName: store, description: 'd2', extractInstructions: sdk.UNSET })));
await call('ListMemoryStores', () => client.listMemoryStores(new sdk.ListMemoryStoresRequest({ limit: 10 })));
const added = await client.addMemories(new sdk.AddMemoriesRequest({ memoryStoreName: store, scope: new sdk.Scope(S1), messages: [new sdk.MessagePayload({ role: 'user', content: 'I write scripts in Python.', messageId: 'm1', timestamp: '2026-08-25T05:52:19Z' })], metadata: { source: 'chat' }, sync: true }));
out.AddMemories = { ok: true, keys: Object.keys(added).sort() };
await client.addMemories(new sdk.AddMemoriesRequest({ memoryStoreName: store, scope: S1, text: 'i write scripts in python', sync: true }));
const mid = added.memoryIds[0];
await call('SearchMemories', () => client.searchMemories(new sdk.SearchMemoriesRequest({ memoryStoreName: store, scope: { ...S1, agentId: '*', runId: '*' }, query: 'python scripts', topK: 5, contextScope: S1, minSimilarity: 0.1, includeEvidence: true })));
await call('ListMemories', () => client.listMemories(new sdk.ListMemoriesRequest({ memoryStoreName: store, scope: { appId: 'app-001', tenantId: 'user-001', agentId: '*' }, limit: 1 })));
await call('GetMemory', () => client.getMemory(new sdk.GetMemoryRequest({ memoryStoreName: store, memoryId: mid, scope: S1 })));
await call('UpdateMemory', () => client.updateMemory(new sdk.UpdateMemoryRequest({ memoryStoreName: store, memoryId: mid, scope: S1, metadata: { reviewed: 'yes' } })));
await call('ListMemoryStoreMessages', () => client.listMemoryStoreMessages(new sdk.ListMemoryStoreMessagesRequest({ memoryStoreName: store, scope: S1, minTimestamp: '2026-08-25T00:00:00Z', maxTimestamp: 4102444800000 })));
await call('ListMemoryStoreRequests', () => client.listMemoryStoreRequests(new sdk.ListMemoryStoreRequestsRequest({ memoryStoreName: store, operation: 'AddMemories', minTimestamp: '1000' })));
await call('ListMemoryStoreScopes', () => client.listMemoryStoreScopes(new sdk.ListMemoryStoreScopesRequest({ memoryStoreName: store, scope: { appId: 'app-001', tenantId: '*' } })));
await call('GetMemoryTask', () => client.getMemoryTask(new sdk.GetMemoryTaskRequest({ memoryStoreName: store, requestId: added.requestId, scope: { appId: 'app-001', tenantId: '*' } })));
await call('ListMemoryTasks', () => client.listMemoryTasks(new sdk.ListMemoryTasksRequest({ memoryStoreName: store, scope: { appId: 'app-001', tenantId: '*' }, status: 'completed', minTimestamp: 0 })));
const dream = await client.createMemoryDreamTask(new sdk.CreateMemoryDreamTaskRequest({ memoryStoreName: store, scopes: [{ appId: 'app-001', tenantId: 'user-001', agentId: '*' }], minTimestamp: 0, maxMessages: 5000, confidenceThresholds: { merge: 0.7 }, clientToken: 't1' }));
out.CreateMemoryDreamTask = { ok: true, keys: Object.keys(dream).sort() };
await call('GetMemoryDreamTask', () => client.getMemoryDreamTask(new sdk.GetMemoryDreamTaskRequest({ memoryStoreName: store, dreamId: dream.dreamId })));
await call('ListMemoryDreamTasks', () => client.listMemoryDreamTasks(new sdk.ListMemoryDreamTasksRequest({ memoryStoreName: store, scope: { appId: 'app-001', tenantId: '*' }, minTimestamp: '0' })));
const acts = await client.listMemoryDreamActions(new sdk.ListMemoryDreamActionsRequest({ memoryStoreName: store, dreamId: dream.dreamId, orderBy: 'confidence_desc' }));
out.ListMemoryDreamActions = { ok: true, keys: Object.keys(acts).sort(), actions: acts.actions.map(a => a.action) };
await call('ApplyMemoryDreamActions', () => client.applyMemoryDreamActions(new sdk.ApplyMemoryDreamActionsRequest({ memoryStoreName: store, dreamId: dream.dreamId, actionIds: acts.actions.map(a => a.actionId).concat(['nope']), applier: 'vendor-sdk' })));
out.ApplyMemoryDreamActions.answer = await client.applyMemoryDreamActions(new sdk.ApplyMemoryDreamActionsRequest({ memoryStoreName: store, dreamId: dream.dreamId, actionIds: ['nope'] }));
await call('CancelMemoryDreamTask', () => client.cancelMemoryDreamTask(new sdk.CancelMemoryDreamTaskRequest({ memoryStoreName: store, dreamId: dream.dreamId })));
await call('DeleteMemory', () => client.deleteMemory(new sdk.DeleteMemoryRequest({ memoryStoreName: store, memoryId: mid, scope: S1 })));
await call('GetMemory(missing)', () => client.getMemory(new sdk.GetMemoryRequest({ memoryStoreName: store, memoryId: mid, scope: S1 })));
await call('DeleteMemoryStore', () => client.deleteMemoryStore(new sdk.DeleteMemoryStoreRequest({ memoryStoreName: store })));
console.log(JSON.stringify(out, null, 1));
