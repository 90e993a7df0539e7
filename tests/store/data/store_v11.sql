-- A store as loopengine 0.1.0 (schema version 11) left it: executions (one awaiting
-- approval), a queued job, a chat session's thread, events, metrics, learned state.
BEGIN TRANSACTION;
CREATE TABLE approvals (
	execution_id VARCHAR(32) NOT NULL, 
	loop_id VARCHAR(200) NOT NULL, 
	action VARCHAR(200) NOT NULL, 
	status VARCHAR(16) NOT NULL, 
	requested_at FLOAT NOT NULL, 
	deadline FLOAT NOT NULL, 
	decided_at FLOAT, 
	note TEXT, 
	PRIMARY KEY (execution_id)
);
INSERT INTO "approvals" VALUES('95d7bac5ee97d200793f7549022feded','cache_cleanup','trash_stale','pending',1.79570479018045067783e+09,1.79571919018045067788e+09,NULL,NULL);
CREATE TABLE artifacts (
	id INTEGER NOT NULL, 
	execution_id VARCHAR(32) NOT NULL, 
	loop_id VARCHAR(200) NOT NULL, 
	name VARCHAR(200) NOT NULL, 
	type VARCHAR(32) NOT NULL, 
	storage VARCHAR(200) NOT NULL, 
	location TEXT NOT NULL, 
	"indexed" BOOLEAN NOT NULL, 
	created_at FLOAT NOT NULL, 
	expires_at FLOAT, 
	PRIMARY KEY (id)
);
INSERT INTO "artifacts" VALUES(1,'58761e83ecd00212d9dedc276ef35e45','reflexive_chat','exchange','outcome','sqlite','sqlite:////tmp/gen/.loopengine/artifacts.db#loopengine_artifacts/1',0,1.79570479388446354869e+09,1.79829679388446354868e+09);
INSERT INTO "artifacts" VALUES(2,'928037262e2783c7ceb8ebf659b756e5','reflexive_chat','exchange','outcome','sqlite','sqlite:////tmp/gen/.loopengine/artifacts.db#loopengine_artifacts/2',0,1.79570479596040654185e+09,1.79829679596040654184e+09);
CREATE TABLE audit (
	id INTEGER NOT NULL, 
	execution_id VARCHAR(32) NOT NULL, 
	loop_id VARCHAR(200) NOT NULL, 
	record JSON NOT NULL, 
	created_at FLOAT NOT NULL, 
	PRIMARY KEY (id)
);
INSERT INTO "audit" VALUES(1,'6af071bd151172ed2498ea32e92a8003','tidy','{"timestamp":"2026-11-26T14:53:11.327+00:00","loop_id":"tidy","loop_version":"0850122aa0c2c1ca2717c9fdbbbf186ac8340a49459fc3bf0ca7c241ee146c47","execution_id":"6af071bd151172ed2498ea32e92a8003","job_id":"b881a341c9ac084bd62d5d9ad6b47d60","trace_id":"d4c6aa61b1e0ae72383e37c037614922","trigger_type":"manual","decision_made":null,"actions_taken":[],"outcome":"completed","confidence":null,"duration_ms":304.38}',1.79570479132764816284e+09);
INSERT INTO "audit" VALUES(2,'58761e83ecd00212d9dedc276ef35e45','reflexive_chat','{"timestamp":"2026-11-26T14:53:13.884+00:00","loop_id":"reflexive_chat","execution_id":"58761e83ecd00212d9dedc276ef35e45","decision_made":"simple","outcome":"completed","duration_ms":489.746}',1.79570479388446354869e+09);
INSERT INTO "audit" VALUES(3,'928037262e2783c7ceb8ebf659b756e5','reflexive_chat','{"timestamp":"2026-11-26T14:53:15.960+00:00","loop_id":"reflexive_chat","execution_id":"928037262e2783c7ceb8ebf659b756e5","decision_made":"simple","outcome":"completed","duration_ms":453.356}',1.79570479596040654185e+09);
CREATE TABLE autolearn_history (
	id INTEGER NOT NULL, 
	kind VARCHAR(32) NOT NULL, 
	category VARCHAR(100), 
	detail JSON NOT NULL, 
	execution_id VARCHAR(32), 
	created_at FLOAT NOT NULL, 
	PRIMARY KEY (id)
);
CREATE TABLE chat_messages (
	session_id VARCHAR(200) NOT NULL, 
	seq INTEGER NOT NULL, 
	role VARCHAR(16) NOT NULL, 
	content TEXT, 
	name VARCHAR(200), 
	tool_call_id VARCHAR(200), 
	tool_calls JSON, 
	operation_id VARCHAR(200) NOT NULL, 
	created_at FLOAT NOT NULL, 
	sent_at VARCHAR(64), 
	relance_index INTEGER, 
	success BOOLEAN, 
	error TEXT, 
	duration_ms FLOAT, 
	PRIMARY KEY (session_id, seq)
);
INSERT INTO "chat_messages" VALUES('s1',1,'user','hello there',NULL,NULL,NULL,'58761e83ecd00212d9dedc276ef35e45:act:simple:0:1:user',1.79570479385291743284e+09,NULL,NULL,NULL,NULL,NULL);
INSERT INTO "chat_messages" VALUES('s1',2,'assistant','hello there',NULL,NULL,NULL,'58761e83ecd00212d9dedc276ef35e45:act:simple:0:1:6ac27a51b348:reply',1.79570479386290526389e+09,NULL,NULL,NULL,NULL,NULL);
INSERT INTO "chat_messages" VALUES('s1',3,'user','and again',NULL,NULL,NULL,'928037262e2783c7ceb8ebf659b756e5:act:simple:0:1:user',1.79570479591452860832e+09,NULL,NULL,NULL,NULL,NULL);
INSERT INTO "chat_messages" VALUES('s1',4,'assistant','and again',NULL,NULL,NULL,'928037262e2783c7ceb8ebf659b756e5:act:simple:0:1:f092cc4d9f47:reply',1.79570479593738627438e+09,NULL,NULL,NULL,NULL,NULL);
CREATE TABLE chat_operations (
	session_id VARCHAR(200) NOT NULL, 
	operation_id VARCHAR(200) NOT NULL, 
	body_hash VARCHAR(64) NOT NULL, 
	version INTEGER NOT NULL, 
	applied_at FLOAT NOT NULL, 
	PRIMARY KEY (session_id, operation_id)
);
INSERT INTO "chat_operations" VALUES('s1','58761e83ecd00212d9dedc276ef35e45:act:simple:0:1:user','a5631572ead356291f536aeda6e431421b05e98a9a16fdbadf81dbaafaf7effa',1,1.79570479385291743284e+09);
INSERT INTO "chat_operations" VALUES('s1','58761e83ecd00212d9dedc276ef35e45:act:simple:0:1:6ac27a51b348:reply','2da82aa2d104953e35a37edc335756aa6229b661a83ea2ab578be0579bd6c30e',2,1.79570479386290526389e+09);
INSERT INTO "chat_operations" VALUES('s1','928037262e2783c7ceb8ebf659b756e5:act:simple:0:1:user','32946a630233f02bdb9ded5319aa8c5e243888f761599b57629c2ed56be262e2',3,1.79570479591452860832e+09);
INSERT INTO "chat_operations" VALUES('s1','928037262e2783c7ceb8ebf659b756e5:act:simple:0:1:f092cc4d9f47:reply','896dc223444051b6703c246d9f2ca4f06b3071b345131085809db9e2aaf20b0b',4,1.79570479593738627438e+09);
CREATE TABLE chat_prompts (
	category VARCHAR(100) NOT NULL, 
	version INTEGER NOT NULL, 
	text TEXT NOT NULL, 
	state VARCHAR(16) NOT NULL, 
	parent INTEGER NOT NULL, 
	baseline FLOAT, 
	watched INTEGER DEFAULT '0' NOT NULL, 
	judged_id INTEGER DEFAULT '0' NOT NULL, 
	reason TEXT NOT NULL, 
	execution_id VARCHAR(32), 
	created_at FLOAT NOT NULL, 
	PRIMARY KEY (category, version)
);
CREATE TABLE chat_scores (
	id INTEGER NOT NULL, 
	execution_id VARCHAR(32) NOT NULL, 
	session_id VARCHAR(200), 
	node VARCHAR(200) NOT NULL, 
	category VARCHAR(100) NOT NULL, 
	mode VARCHAR(16) NOT NULL, 
	seconds FLOAT NOT NULL, 
	output_tokens INTEGER NOT NULL, 
	success BOOLEAN NOT NULL, 
	message TEXT NOT NULL, 
	reply TEXT NOT NULL, 
	quality FLOAT, 
	graded_at FLOAT, 
	created_at FLOAT NOT NULL, 
	prompt_version INTEGER DEFAULT '0' NOT NULL, 
	claimed_until FLOAT, 
	PRIMARY KEY (id)
);
INSERT INTO "chat_scores" VALUES(1,'58761e83ecd00212d9dedc276ef35e45','s1','OL1','simple','simple',6.39573400076187681406e-03,5,1,'hello there','hello there',NULL,NULL,1.7957047938675796986e+09,0,NULL);
INSERT INTO "chat_scores" VALUES(2,'928037262e2783c7ceb8ebf659b756e5','s1','OL1','simple','simple',9.25228199957928154617e-03,5,1,'and again','and again',NULL,NULL,1.79570479594760227205e+09,0,NULL);
CREATE TABLE chat_sessions (
	id VARCHAR(200) NOT NULL, 
	version INTEGER NOT NULL, 
	created_at FLOAT NOT NULL, 
	updated_at FLOAT NOT NULL, 
	PRIMARY KEY (id)
);
INSERT INTO "chat_sessions" VALUES('s1',4,1.79570479385291743284e+09,1.79570479593738627438e+09);
CREATE TABLE context_cache (
	"key" VARCHAR(400) NOT NULL, 
	value JSON NOT NULL, 
	expires_at FLOAT NOT NULL, 
	PRIMARY KEY ("key")
);
CREATE TABLE cursors (
	name VARCHAR(200) NOT NULL, 
	position INTEGER NOT NULL, 
	updated_at FLOAT NOT NULL, 
	PRIMARY KEY (name)
);
CREATE TABLE daemons (
	id VARCHAR(200) NOT NULL, 
	host VARCHAR(200) NOT NULL, 
	pid INTEGER NOT NULL, 
	started_at FLOAT NOT NULL, 
	heartbeat_at FLOAT NOT NULL, 
	stopped_at FLOAT, 
	loops JSON NOT NULL, 
	PRIMARY KEY (id)
);
CREATE TABLE envelopes (
	job_id VARCHAR(32) NOT NULL, 
	trace_id VARCHAR(32) NOT NULL, 
	intent VARCHAR(200) NOT NULL, 
	scope JSON NOT NULL, 
	payload JSON NOT NULL, 
	constraints JSON NOT NULL, 
	idempotency_key VARCHAR(200) NOT NULL, 
	execution_id VARCHAR(32) NOT NULL, 
	created_at FLOAT NOT NULL, 
	PRIMARY KEY (job_id), 
	UNIQUE (idempotency_key)
);
INSERT INTO "envelopes" VALUES('21a37d2cba9032d6af1ebffb193769d8','8f8231b4d8504111cc8e1d46b8bb5de9','cache_cleanup','{"limit":1000}','{}','{}','21a37d2cba9032d6af1ebffb193769d8','95d7bac5ee97d200793f7549022feded',1.7957047898645796776e+09);
INSERT INTO "envelopes" VALUES('b881a341c9ac084bd62d5d9ad6b47d60','d4c6aa61b1e0ae72383e37c037614922','tidy','{"limit":1000}','{"folder":"x"}','{}','b881a341c9ac084bd62d5d9ad6b47d60','6af071bd151172ed2498ea32e92a8003',1.79570479102326774597e+09);
INSERT INTO "envelopes" VALUES('d504e78af4b96014643117faab923789','a817dcd5f8ec6108e88b2eca32b4ee5a','reflexive_chat','{"limit":1000}','{"message":"hello there","session":"s1","user":"root"}','{}','d504e78af4b96014643117faab923789','58761e83ecd00212d9dedc276ef35e45',1.79570479339471793167e+09);
INSERT INTO "envelopes" VALUES('86265eca4a2ecc4367c50a724b33938e','919c585727f99a4309a100f1c3d0c29c','reflexive_chat','{"limit":1000}','{"message":"and again","session":"s1","user":"root"}','{}','86265eca4a2ecc4367c50a724b33938e','928037262e2783c7ceb8ebf659b756e5',1.79570479550705075261e+09);
CREATE TABLE events (
	id INTEGER NOT NULL, 
	name VARCHAR(200) NOT NULL, 
	source VARCHAR(200) NOT NULL, 
	data JSON NOT NULL, 
	execution_id VARCHAR(32), 
	created_at FLOAT NOT NULL, 
	PRIMARY KEY (id)
);
INSERT INTO "events" VALUES(1,'cache.checked','cli','{"ok":true}',NULL,1.79570478892886757852e+09);
CREATE TABLE executions (
	id VARCHAR(32) NOT NULL, 
	loop_id VARCHAR(200) NOT NULL, 
	loop_version VARCHAR(64) NOT NULL, 
	loop_file TEXT NOT NULL, 
	status VARCHAR(32) NOT NULL, 
	outcome VARCHAR(32), 
	job_id VARCHAR(32) NOT NULL, 
	trigger_type VARCHAR(32) NOT NULL, 
	durability VARCHAR(16) NOT NULL, 
	dry_run BOOLEAN NOT NULL, 
	started_at FLOAT NOT NULL, 
	completed_at FLOAT, 
	last_phase VARCHAR(16), 
	owner VARCHAR(200), 
	context JSON NOT NULL, 
	usage JSON NOT NULL, 
	error TEXT, 
	"trigger" JSON DEFAULT '{}' NOT NULL, 
	PRIMARY KEY (id)
);
INSERT INTO "executions" VALUES('95d7bac5ee97d200793f7549022feded','cache_cleanup','c6cf0b06b018768d270e50ed846b6c78ddaac12d268ad6dc26128eff2fbd6455','cache_cleanup.yaml','waiting','awaiting_approval','21a37d2cba9032d6af1ebffb193769d8','manual','phase',0,1.7957047898645796776e+09,NULL,'decide','vm:18404','{"data":{"loop":{"id":"cache_cleanup","name":"Cache cleanup","domain":"INFRA"},"trigger":{"fired_at":1795704789.8645797,"type":"manual"},"job":{"job_id":"21a37d2cba9032d6af1ebffb193769d8","trace_id":"8f8231b4d8504111cc8e1d46b8bb5de9","intent":"cache_cleanup","scope":{"limit":1000},"payload":{},"constraints":{},"idempotency_key":"21a37d2cba9032d6af1ebffb193769d8"},"input":{"folder":"cache","max_age_days":7},"last_run":null,"since_last_run":null,"state":{},"now":1795704789.8645797,"detect":{"infra.cache.usage":{"name":"infra.cache.usage","value":0.93,"values":[0.93],"count":1,"sum":0.93,"avg":0.93,"min":0.93,"max":0.93,"latest_at":1795704787.9941926}},"cache":{"usage":0.93,"files":1,"stale":["old.bin"],"bytes":0},"context":{},"analysis":{"scan":{"cache":{"files":1,"stale":["old.bin"],"bytes":0}}},"confidence":1.0,"decision":{"action":"trash_stale","rule":0,"priority":"normal","condition":"length(cache.stale) > `0`","confidence":1.0,"reason":"rule 0 holds: length(cache.stale) > `0`","skipped_low_confidence":[]}},"rollbacks":[],"act_attempts":0,"samples":0,"last_adjusted_at":null,"loop_parts":{"id":"28975df431fe7133","name":"1fd07840d01c3064","domain":"fd0427f80ec29bb0","description":"330e468359f04220","trigger":"cb7be5a8d3d44918","params":"87736e2130e7e26d","detect":"77cedc9169ad0b30","analyze":"d0d8f6b3c774898b","decide":"08ea030b422ca827","act":"9e630f456dce0979","validate":"282fda8a57630291","learn":"aa87e7f0af7f1997","store":"0b2d618242e984d8","emit":"05f8f365ac20c65e"}}','{"tokens":0,"llm_calls":0}',NULL,'{}');
INSERT INTO "executions" VALUES('6af071bd151172ed2498ea32e92a8003','tidy','0850122aa0c2c1ca2717c9fdbbbf186ac8340a49459fc3bf0ca7c241ee146c47','manual.yaml','finished','completed','b881a341c9ac084bd62d5d9ad6b47d60','manual','phase',0,1.79570479102326774597e+09,1.7957047913277337551e+09,'store','vm:18407','{"data":{"loop":{"id":"tidy","name":null,"domain":null},"trigger":{"fired_at":1795704791.0232677,"type":"manual"},"job":{"job_id":"b881a341c9ac084bd62d5d9ad6b47d60","trace_id":"d4c6aa61b1e0ae72383e37c037614922","intent":"tidy","scope":{"limit":1000},"payload":{"folder":"x"},"constraints":{},"idempotency_key":"b881a341c9ac084bd62d5d9ad6b47d60"},"input":{"folder":"x"},"last_run":null,"since_last_run":null,"state":{},"now":1795704791.0232677,"detect":{"infra.cache.usage":{"name":"infra.cache.usage","value":0.93,"values":[0.93],"count":1,"sum":0.93,"avg":0.93,"min":0.93,"max":0.93,"latest_at":1795704787.9941926}},"infra":{"cache":{"usage":0.93}}},"rollbacks":[],"act_attempts":0,"samples":0,"last_adjusted_at":null,"loop_parts":{"id":"dafee7377c300d5a","trigger":"dc0d68835494d711","params":"417c4e4ba79db3b1","detect":"033de9d202034007"}}','{"tokens":0,"llm_calls":0}',NULL,'{}');
INSERT INTO "executions" VALUES('58761e83ecd00212d9dedc276ef35e45','reflexive_chat','abe38d4150e3e470b4cf78f046a348384cc8da8c109fa8dafa23bbf65b119a82','/work/main/loops/reflexive_chat.yaml','finished','completed','d504e78af4b96014643117faab923789','manual','phase',0,1.79570479339471793167e+09,1.79570479393198776242e+09,'store','vm:18412','{"data":{"loop":{"id":"reflexive_chat","name":"Reflexive chat","domain":"AICOS"},"trigger":{"fired_at":1795704793.394718,"type":"manual"},"job":{"job_id":"d504e78af4b96014643117faab923789","trace_id":"a817dcd5f8ec6108e88b2eca32b4ee5a","intent":"reflexive_chat","scope":{"limit":1000},"payload":{"message":"hello there","session":"s1","user":"root"},"constraints":{},"idempotency_key":"d504e78af4b96014643117faab923789"},"input":{"max_turns":8,"message":"hello there","session":"s1","user":"root"},"last_run":null,"since_last_run":null,"state":{"score":1.0},"now":1795704793.394718,"context":{},"analysis":{"classify":{"classification":{"mode":"simple","reasons":["short and plain (11 characters)"]}}},"classification":{"mode":"simple","reasons":["short and plain (11 characters)"]},"confidence":1.0,"decision":{"action":"simple","rule":null,"priority":null,"condition":null,"confidence":1.0,"reason":"no rule applied: fallback action","skipped_low_confidence":[]},"act":{"simple":{"result":{"chat":{"reply":"hello there","mode":"simple","turns":1,"chain":[{"node":"OL1","model":"echo","turns":1,"status":"ok","tools_used":[],"duration_ms":6.7}],"tools_used":[],"session_id":"s1","category":"simple","node":"OL1","latency_ms":27.5,"skipped":[]}}}},"chat":{"reply":"hello there","mode":"simple","turns":1,"chain":[{"node":"OL1","model":"echo","turns":1,"status":"ok","tools_used":[],"duration_ms":6.7}],"tools_used":[],"session_id":"s1","category":"simple","node":"OL1","latency_ms":27.5,"skipped":[]},"validate":{"passed":true,"failed":[],"criteria_met":true},"learn":{"score":1.0}},"rollbacks":[],"act_attempts":1,"samples":1,"last_adjusted_at":1795704793.8842378,"loop_parts":{"id":"ad2a51760ce3cfd5","name":"7c6739924b0f44a8","domain":"68f815abfeab49ab","description":"e35718f2ab6de02a","trigger":"dc0d68835494d711","durability":"a28370790538acea","params":"e41a6897041e8e14","analyze":"406a621cf84e34e3","decide":"0f0c3bd8b78b81c5","act":"6e707f288c968f75","validate":"5f62ad3844ee45dc","learn":"1c044b6c289c4180","store":"b953dc3ecc5e8909"}}','{"tokens":15,"llm_calls":1}',NULL,'{}');
INSERT INTO "executions" VALUES('928037262e2783c7ceb8ebf659b756e5','reflexive_chat','abe38d4150e3e470b4cf78f046a348384cc8da8c109fa8dafa23bbf65b119a82','/work/main/loops/reflexive_chat.yaml','finished','completed','86265eca4a2ecc4367c50a724b33938e','manual','phase',0,1.79570479550705075261e+09,1.7957047959757158756e+09,'store','vm:18417','{"data":{"loop":{"id":"reflexive_chat","name":"Reflexive chat","domain":"AICOS"},"trigger":{"fired_at":1795704795.5070508,"type":"manual"},"job":{"job_id":"86265eca4a2ecc4367c50a724b33938e","trace_id":"919c585727f99a4309a100f1c3d0c29c","intent":"reflexive_chat","scope":{"limit":1000},"payload":{"message":"and again","session":"s1","user":"root"},"constraints":{},"idempotency_key":"86265eca4a2ecc4367c50a724b33938e"},"input":{"max_turns":8,"message":"and again","session":"s1","user":"root"},"last_run":{"outcome":"completed","completed_at":"2026-11-26T14:53:13.931+00:00"},"since_last_run":1.5750629901885986,"state":{"score":1.0},"now":1795704795.5070508,"context":{},"analysis":{"classify":{"classification":{"mode":"simple","reasons":["short and plain (9 characters)"]}}},"classification":{"mode":"simple","reasons":["short and plain (9 characters)"]},"confidence":1.0,"decision":{"action":"simple","rule":null,"priority":null,"condition":null,"confidence":1.0,"reason":"no rule applied: fallback action","skipped_low_confidence":[]},"act":{"simple":{"result":{"chat":{"reply":"and again","mode":"simple","turns":1,"chain":[{"node":"OL1","model":"echo","turns":1,"status":"ok","tools_used":[],"duration_ms":9.5}],"tools_used":[],"session_id":"s1","category":"simple","node":"OL1","latency_ms":31.9,"skipped":[]}}}},"chat":{"reply":"and again","mode":"simple","turns":1,"chain":[{"node":"OL1","model":"echo","turns":1,"status":"ok","tools_used":[],"duration_ms":9.5}],"tools_used":[],"session_id":"s1","category":"simple","node":"OL1","latency_ms":31.9,"skipped":[]},"validate":{"passed":true,"failed":[],"criteria_met":true},"learn":{"score":1.0}},"rollbacks":[],"act_attempts":1,"samples":2,"last_adjusted_at":1795704795.9602163,"loop_parts":{"id":"ad2a51760ce3cfd5","name":"7c6739924b0f44a8","domain":"68f815abfeab49ab","description":"e35718f2ab6de02a","trigger":"dc0d68835494d711","durability":"a28370790538acea","params":"e41a6897041e8e14","analyze":"406a621cf84e34e3","decide":"0f0c3bd8b78b81c5","act":"6e707f288c968f75","validate":"5f62ad3844ee45dc","learn":"1c044b6c289c4180","store":"b953dc3ecc5e8909"}}','{"tokens":15,"llm_calls":1}',NULL,'{}');
CREATE TABLE feature_flags (
	name VARCHAR(200) NOT NULL, 
	enabled BOOLEAN NOT NULL, 
	updated_at FLOAT NOT NULL, 
	PRIMARY KEY (name)
);
CREATE TABLE jobs (
	id VARCHAR(32) NOT NULL, 
	loop_id VARCHAR(200) NOT NULL, 
	"trigger" JSON NOT NULL, 
	envelope JSON NOT NULL, 
	idempotency_key VARCHAR(200) NOT NULL, 
	status VARCHAR(16) NOT NULL, 
	reason TEXT, 
	not_before FLOAT NOT NULL, 
	owner VARCHAR(200), 
	lease_until FLOAT, 
	attempts INTEGER NOT NULL, 
	cancel_requested BOOLEAN NOT NULL, 
	execution_id VARCHAR(32), 
	outcome VARCHAR(32), 
	created_at FLOAT NOT NULL, 
	finished_at FLOAT, 
	PRIMARY KEY (id), 
	UNIQUE (idempotency_key)
);
INSERT INTO "jobs" VALUES('c618b80c6379c31a42ce68a0bcd731e2','tidy','{"type":"manual","id":"cli"}','{"job_id":"c618b80c6379c31a42ce68a0bcd731e2","trace_id":"3c2f722b57e318e935236b2f10049e21","intent":"tidy","scope":{"limit":1000},"payload":{},"constraints":{},"idempotency_key":"manual:1809ccf1121ded8ec5ad42669c2d04c3"}','manual:1809ccf1121ded8ec5ad42669c2d04c3','queued',NULL,1.79570479994420552252e+09,NULL,NULL,0,0,NULL,NULL,1.79570479994420552252e+09,NULL);
CREATE TABLE loop_state (
	loop_id VARCHAR(200) NOT NULL, 
	"values" JSON NOT NULL, 
	samples INTEGER NOT NULL, 
	last_adjusted_at FLOAT, 
	updated_at FLOAT NOT NULL, 
	PRIMARY KEY (loop_id)
);
INSERT INTO "loop_state" VALUES('reflexive_chat','{"score":1.0}',2,1.79570479596021628375e+09,1.79570479596021628375e+09);
CREATE TABLE memory_exchanges (
	id INTEGER NOT NULL, 
	user_id VARCHAR(200) NOT NULL, 
	session_id VARCHAR(200), 
	category VARCHAR(100) NOT NULL, 
	message TEXT NOT NULL, 
	reply TEXT NOT NULL, 
	created_at FLOAT NOT NULL, 
	PRIMARY KEY (id)
);
INSERT INTO "memory_exchanges" VALUES(1,'root','s1','simple','hello there','hello there',1.79570479386760807043e+09);
INSERT INTO "memory_exchanges" VALUES(2,'root','s1','simple','and again','and again',1795704795.94763);
CREATE TABLE memory_profiles (
	user_id VARCHAR(200) NOT NULL, 
	exchanges INTEGER NOT NULL, 
	profile JSON, 
	profiled_at INTEGER DEFAULT '0' NOT NULL, 
	summary TEXT, 
	summary_node VARCHAR(200), 
	summarized_at INTEGER DEFAULT '0' NOT NULL, 
	updated_at FLOAT NOT NULL, 
	PRIMARY KEY (user_id)
);
INSERT INTO "memory_profiles" VALUES('root',2,NULL,0,NULL,NULL,0,1795704795.94763);
CREATE TABLE metrics (
	id INTEGER NOT NULL, 
	name VARCHAR(200) NOT NULL, 
	value FLOAT NOT NULL, 
	labels JSON NOT NULL, 
	recorded_at FLOAT NOT NULL, 
	PRIMARY KEY (id)
);
INSERT INTO "metrics" VALUES(1,'infra.cache.usage',0.93,'{"host":"a"}',1.79570478799419260031e+09);
INSERT INTO "metrics" VALUES(2,'llm.chat.latency_ms',27.5,'{"node":"OL1","category":"simple","mode":"simple"}',1.79570479388423776632e+09);
INSERT INTO "metrics" VALUES(3,'llm.chat.turns',1.0,'{"node":"OL1","category":"simple","mode":"simple"}',1.79570479388423776632e+09);
INSERT INTO "metrics" VALUES(4,'llm.chat.ok',1.0,'{"node":"OL1","category":"simple","mode":"simple"}',1.79570479388423776632e+09);
INSERT INTO "metrics" VALUES(5,'llm.chat.latency_ms',31.9,'{"node":"OL1","category":"simple","mode":"simple"}',1.79570479596021628375e+09);
INSERT INTO "metrics" VALUES(6,'llm.chat.turns',1.0,'{"node":"OL1","category":"simple","mode":"simple"}',1.79570479596021628375e+09);
INSERT INTO "metrics" VALUES(7,'llm.chat.ok',1.0,'{"node":"OL1","category":"simple","mode":"simple"}',1.79570479596021628375e+09);
CREATE TABLE node_health (
	node VARCHAR(200) NOT NULL, 
	failures INTEGER NOT NULL, 
	cooled_until FLOAT NOT NULL, 
	last_error TEXT, 
	updated_at FLOAT NOT NULL, 
	PRIMARY KEY (node)
);
INSERT INTO "node_health" VALUES('OL1',0,0.0,NULL,1.79570479594360780713e+09);
CREATE TABLE paused_loops (
	loop_id VARCHAR(200) NOT NULL, 
	paused_at FLOAT NOT NULL, 
	PRIMARY KEY (loop_id)
);
CREATE TABLE phase_results (
	execution_id VARCHAR(32) NOT NULL, 
	seq INTEGER NOT NULL, 
	phase VARCHAR(16) NOT NULL, 
	started_at FLOAT NOT NULL, 
	completed_at FLOAT NOT NULL, 
	success BOOLEAN NOT NULL, 
	outcome VARCHAR(32), 
	data JSON NOT NULL, 
	errors JSON NOT NULL, 
	PRIMARY KEY (execution_id, seq)
);
INSERT INTO "phase_results" VALUES('95d7bac5ee97d200793f7549022feded',1,'detect',1.79570478987211680412e+09,1.79570479017277383803e+09,1,NULL,'{"sources":{"infra.cache.usage":{"name":"infra.cache.usage","value":0.93,"count":1,"sum":0.93,"avg":0.93,"min":0.93,"max":0.93,"latest_at":1795704787.9941926}},"calls":[{"skill":"source.metric","step":"infra.cache.usage","ok":true,"attempts":1,"duration_ms":33.623}]}','[]');
INSERT INTO "phase_results" VALUES('95d7bac5ee97d200793f7549022feded',2,'analyze',1.79570479017293596268e+09,1.79570479018008565905e+09,1,NULL,'{"strategy":"rule_based","steps":["scan"],"confidence":1.0,"step_confidence":{"scan":1.0},"calls":[{"skill":"scan_cache","step":"scan","ok":true,"attempts":1,"duration_ms":6.891}]}','[]');
INSERT INTO "phase_results" VALUES('95d7bac5ee97d200793f7549022feded',3,'decide',1.7957047901802330017e+09,1.79570479018038296706e+09,1,'awaiting_approval','{"decision":{"action":"trash_stale","rule":0,"priority":"normal","condition":"length(cache.stale) > `0`","confidence":1.0,"reason":"rule 0 holds: length(cache.stale) > `0`","skipped_low_confidence":[]},"approval":{"action":"trash_stale","timeout_hours":4.0,"escalation_target":"ops.oncall","plan":[{"action_id":"trash_stale","skill":"trash_file","params":{"folder":"cache","item":"old.bin"},"items":["old.bin"],"count":1}]}}','[]');
INSERT INTO "phase_results" VALUES('6af071bd151172ed2498ea32e92a8003',1,'detect',1.79570479102923965457e+09,1.79570479132596158978e+09,1,NULL,'{"sources":{"infra.cache.usage":{"name":"infra.cache.usage","value":0.93,"count":1,"sum":0.93,"avg":0.93,"min":0.93,"max":0.93,"latest_at":1795704787.9941926}},"calls":[{"skill":"source.metric","step":"infra.cache.usage","ok":true,"attempts":1,"duration_ms":15.366}]}','[]');
INSERT INTO "phase_results" VALUES('6af071bd151172ed2498ea32e92a8003',2,'analyze',1.79570479132615828509e+09,1.79570479132615828509e+09,1,NULL,'{"skipped":"not in the loop"}','[]');
INSERT INTO "phase_results" VALUES('6af071bd151172ed2498ea32e92a8003',3,'decide',1.79570479132616496083e+09,1.79570479132616496083e+09,1,NULL,'{"skipped":"not in the loop"}','[]');
INSERT INTO "phase_results" VALUES('6af071bd151172ed2498ea32e92a8003',4,'act',1.79570479132617878909e+09,1.79570479132617878909e+09,1,NULL,'{"skipped":"not in the loop"}','[]');
INSERT INTO "phase_results" VALUES('6af071bd151172ed2498ea32e92a8003',5,'validate',1.79570479132618260383e+09,1.79570479132618260383e+09,1,NULL,'{"skipped":"not in the loop"}','[]');
INSERT INTO "phase_results" VALUES('6af071bd151172ed2498ea32e92a8003',6,'learn',1.79570479132618665693e+09,1.79570479132618665693e+09,1,NULL,'{"skipped":"not in the loop"}','[]');
INSERT INTO "phase_results" VALUES('6af071bd151172ed2498ea32e92a8003',7,'store',1.79570479132619810098e+09,1.79570479132771897321e+09,1,NULL,'{"artifacts":[],"audit":{"timestamp":"2026-11-26T14:53:11.327+00:00","loop_id":"tidy","loop_version":"0850122aa0c2c1ca2717c9fdbbbf186ac8340a49459fc3bf0ca7c241ee146c47","execution_id":"6af071bd151172ed2498ea32e92a8003","job_id":"b881a341c9ac084bd62d5d9ad6b47d60","trace_id":"d4c6aa61b1e0ae72383e37c037614922","trigger_type":"manual","decision_made":null,"actions_taken":[],"outcome":"completed","confidence":null,"duration_ms":304.38}}','[]');
INSERT INTO "phase_results" VALUES('58761e83ecd00212d9dedc276ef35e45',1,'detect',1.79570479340094470979e+09,1.79570479340094470979e+09,1,NULL,'{"skipped":"not in the loop"}','[]');
INSERT INTO "phase_results" VALUES('58761e83ecd00212d9dedc276ef35e45',2,'analyze',1.79570479340095734595e+09,1.79570479381816887854e+09,1,NULL,'{"strategy":"rule_based","steps":["classify"],"confidence":1.0,"calls":[{"skill":"llm.classify","step":"classify","ok":true,"attempts":1,"duration_ms":1.004}]}','[]');
INSERT INTO "phase_results" VALUES('58761e83ecd00212d9dedc276ef35e45',3,'decide',1.79570479381837487219e+09,1.79570479381851887696e+09,1,NULL,'{"decision":{"action":"simple","rule":null,"priority":null,"condition":null,"confidence":1.0,"reason":"no rule applied: fallback action","skipped_low_confidence":[]}}','[]');
INSERT INTO "phase_results" VALUES('58761e83ecd00212d9dedc276ef35e45',4,'act',1.79570479381859970089e+09,1.79570479388377857209e+09,1,NULL,'{"action":"simple","attempt":1,"actions":[{"action_id":"simple","calls":1,"dry_run":false}],"calls":[{"skill":"llm.agent","step":"simple","ok":true,"result":{"chat":{"reply":"hello there","mode":"simple","turns":1,"chain":[{"node":"OL1","model":"echo","turns":1,"status":"ok","tools_used":[],"duration_ms":6.7}],"tools_used":[],"session_id":"s1","category":"simple","node":"OL1","latency_ms":27.5,"skipped":[]}},"metrics":{"llm.tokens":15.0,"llm.calls":1.0},"attempts":1,"duration_ms":64.805}]}','[]');
INSERT INTO "phase_results" VALUES('58761e83ecd00212d9dedc276ef35e45',5,'validate',1.79570479388400053985e+09,1.7957047938841233254e+09,1,NULL,'{"assertions":[{"expression":"length(chat.reply) > `0`","severity":"error","passed":true}],"criteria":[],"retries":0}','[]');
INSERT INTO "phase_results" VALUES('58761e83ecd00212d9dedc276ef35e45',6,'learn',1.79570479388423323626e+09,1.79570479388436746595e+09,1,NULL,'{"score":1.0,"signals":{"replied":1.0},"recorded":[{"name":"llm.chat.latency_ms","value":27.5,"labels":{"node":"OL1","category":"simple","mode":"simple"}},{"name":"llm.chat.turns","value":1.0,"labels":{"node":"OL1","category":"simple","mode":"simple"}},{"name":"llm.chat.ok","value":1.0,"labels":{"node":"OL1","category":"simple","mode":"simple"}}],"update":{"score":{"from":null,"to":1.0}},"samples":1}','[]');
INSERT INTO "phase_results" VALUES('58761e83ecd00212d9dedc276ef35e45',7,'store',1795704793.88446,1.79570479393196654315e+09,1,NULL,'{"artifacts":[{"name":"exchange","storage":"sqlite","location":"sqlite:////tmp/gen/.loopengine/artifacts.db#loopengine_artifacts/1"}],"audit":{"timestamp":"2026-11-26T14:53:13.884+00:00","loop_id":"reflexive_chat","execution_id":"58761e83ecd00212d9dedc276ef35e45","decision_made":"simple","outcome":"completed","duration_ms":489.746}}','[]');
INSERT INTO "phase_results" VALUES('928037262e2783c7ceb8ebf659b756e5',1,'detect',1.79570479551722240445e+09,1.79570479551722240445e+09,1,NULL,'{"skipped":"not in the loop"}','[]');
INSERT INTO "phase_results" VALUES('928037262e2783c7ceb8ebf659b756e5',2,'analyze',1.79570479551723575593e+09,1.79570479585825014119e+09,1,NULL,'{"strategy":"rule_based","steps":["classify"],"confidence":1.0,"calls":[{"skill":"llm.classify","step":"classify","ok":true,"attempts":1,"duration_ms":0.626}]}','[]');
INSERT INTO "phase_results" VALUES('928037262e2783c7ceb8ebf659b756e5',3,'decide',1795704795.8584,1.79570479585850358008e+09,1,NULL,'{"decision":{"action":"simple","rule":null,"priority":null,"condition":null,"confidence":1.0,"reason":"no rule applied: fallback action","skipped_low_confidence":[]}}','[]');
INSERT INTO "phase_results" VALUES('928037262e2783c7ceb8ebf659b756e5',4,'act',1.79570479585856413841e+09,1.79570479595986580846e+09,1,NULL,'{"action":"simple","attempt":1,"actions":[{"action_id":"simple","calls":1,"dry_run":false}],"calls":[{"skill":"llm.agent","step":"simple","ok":true,"result":{"chat":{"reply":"and again","mode":"simple","turns":1,"chain":[{"node":"OL1","model":"echo","turns":1,"status":"ok","tools_used":[],"duration_ms":9.5}],"tools_used":[],"session_id":"s1","category":"simple","node":"OL1","latency_ms":31.9,"skipped":[]}},"metrics":{"llm.tokens":15.0,"llm.calls":1.0},"attempts":1,"duration_ms":101.011}]}','[]');
INSERT INTO "phase_results" VALUES('928037262e2783c7ceb8ebf659b756e5',5,'validate',1.79570479596006965638e+09,1.79570479596014332766e+09,1,NULL,'{"assertions":[{"expression":"length(chat.reply) > `0`","severity":"error","passed":true}],"criteria":[],"retries":0}','[]');
INSERT INTO "phase_results" VALUES('928037262e2783c7ceb8ebf659b756e5',6,'learn',1.79570479596021270749e+09,1.7957047959603118897e+09,1,NULL,'{"score":1.0,"signals":{"replied":1.0},"recorded":[{"name":"llm.chat.latency_ms","value":31.9,"labels":{"node":"OL1","category":"simple","mode":"simple"}},{"name":"llm.chat.turns","value":1.0,"labels":{"node":"OL1","category":"simple","mode":"simple"}},{"name":"llm.chat.ok","value":1.0,"labels":{"node":"OL1","category":"simple","mode":"simple"}}],"update":{"score":{"from":1.0,"to":1.0}},"samples":2}','[]');
INSERT INTO "phase_results" VALUES('928037262e2783c7ceb8ebf659b756e5',7,'store',1.79570479596040248875e+09,1.79570479597569346427e+09,1,NULL,'{"artifacts":[{"name":"exchange","storage":"sqlite","location":"sqlite:////tmp/gen/.loopengine/artifacts.db#loopengine_artifacts/2"}],"audit":{"timestamp":"2026-11-26T14:53:15.960+00:00","loop_id":"reflexive_chat","execution_id":"928037262e2783c7ceb8ebf659b756e5","decision_made":"simple","outcome":"completed","duration_ms":453.356}}','[]');
CREATE TABLE reviews (
	id INTEGER NOT NULL, 
	execution_id VARCHAR(32) NOT NULL, 
	loop_id VARCHAR(200) NOT NULL, 
	reason TEXT NOT NULL, 
	status VARCHAR(16) NOT NULL, 
	created_at FLOAT NOT NULL, 
	PRIMARY KEY (id)
);
CREATE TABLE routing_orders (
	category VARCHAR(100) NOT NULL, 
	nodes JSON NOT NULL, 
	version INTEGER NOT NULL, 
	reason TEXT NOT NULL, 
	execution_id VARCHAR(32), 
	updated_at FLOAT NOT NULL, 
	PRIMARY KEY (category)
);
CREATE TABLE schema_version (
	version INTEGER NOT NULL, 
	applied_at FLOAT NOT NULL, 
	description TEXT NOT NULL, 
	PRIMARY KEY (version)
);
INSERT INTO "schema_version" VALUES(1,1.79570478812069725992e+09,'initial tables');
INSERT INTO "schema_version" VALUES(2,1.79570478814146709443e+09,'LLM node health and chat threads');
INSERT INTO "schema_version" VALUES(3,1.79570478814197063447e+09,'tool-call ids are unique per session only');
INSERT INTO "schema_version" VALUES(4,1.79570478815181851393e+09,'indexes for history by start time and outcome');
INSERT INTO "schema_version" VALUES(5,1.79570478816447925574e+09,'the daemon: jobs, cron slots, daemons, pauses, cursors');
INSERT INTO "schema_version" VALUES(6,1.79570478816689658163e+09,'autolearn: chat scores, routing orders, history');
INSERT INTO "schema_version" VALUES(7,1.79570478818166828155e+09,'autolearn: users'' memory and versioned chat prompts');
INSERT INTO "schema_version" VALUES(8,1.79570478818288922304e+09,'autolearn: scores'' history, samples judged per prompt version');
INSERT INTO "schema_version" VALUES(9,1.79570478819178915019e+09,'autolearn: grading claims lapse when their process died');
INSERT INTO "schema_version" VALUES(10,1.79570478819284033776e+09,'webhook bodies held against replays');
INSERT INTO "schema_version" VALUES(11,1.79570478819326782233e+09,'tool messages keep what they say of the tool''s run');
CREATE TABLE score_history (
	id INTEGER NOT NULL, 
	category VARCHAR(100) NOT NULL, 
	node VARCHAR(200) NOT NULL, 
	score FLOAT NOT NULL, 
	speed FLOAT NOT NULL, 
	quality FLOAT NOT NULL, 
	reliability FLOAT NOT NULL, 
	samples INTEGER NOT NULL, 
	execution_id VARCHAR(32), 
	created_at FLOAT NOT NULL, 
	PRIMARY KEY (id)
);
CREATE TABLE ticks (
	loop_id VARCHAR(200) NOT NULL, 
	trigger_id VARCHAR(200) NOT NULL, 
	scheduled_for FLOAT NOT NULL, 
	status VARCHAR(16) NOT NULL, 
	reason TEXT, 
	job_id VARCHAR(32), 
	recorded_at FLOAT NOT NULL, 
	PRIMARY KEY (loop_id, trigger_id, scheduled_for)
);
CREATE TABLE trigger_states (
	loop_id VARCHAR(200) NOT NULL, 
	trigger_id VARCHAR(200) NOT NULL, 
	metric VARCHAR(200) NOT NULL, 
	state VARCHAR(16) NOT NULL, 
	value FLOAT, 
	since FLOAT NOT NULL, 
	armed BOOLEAN NOT NULL, 
	cleared_at FLOAT, 
	evaluated_at FLOAT NOT NULL, 
	PRIMARY KEY (loop_id, trigger_id)
);
CREATE TABLE webhook_bodies (
	"key" VARCHAR(200) NOT NULL, 
	idempotency_key VARCHAR(200) NOT NULL, 
	expires_at FLOAT NOT NULL, 
	PRIMARY KEY ("key")
);
CREATE INDEX ix_artifacts_expires ON artifacts (expires_at);
CREATE INDEX ix_audit_loop_created ON audit (loop_id, created_at);
CREATE INDEX ix_events_name_created ON events (name, created_at);
CREATE INDEX ix_executions_outcome_started ON executions (outcome, started_at);
CREATE INDEX ix_executions_loop_started ON executions (loop_id, started_at);
CREATE INDEX ix_executions_loop_outcome_started ON executions (loop_id, outcome, started_at);
CREATE INDEX ix_executions_loop_completed ON executions (loop_id, completed_at);
CREATE INDEX ix_executions_status ON executions (status);
CREATE INDEX ix_executions_started ON executions (started_at);
CREATE INDEX ix_metrics_name_recorded ON metrics (name, recorded_at);
CREATE UNIQUE INDEX ux_chat_messages_tool_call ON chat_messages (session_id, tool_call_id);
CREATE INDEX ix_jobs_loop_status ON jobs (loop_id, status);
CREATE INDEX ix_jobs_status_created ON jobs (status, created_at);
CREATE INDEX ix_chat_scores_category_node ON chat_scores (category, node, id);
CREATE INDEX ix_chat_scores_graded ON chat_scores (graded_at, id);
CREATE INDEX ix_chat_scores_claimed ON chat_scores (claimed_until);
CREATE INDEX ix_memory_exchanges_user ON memory_exchanges (user_id, id);
CREATE INDEX ix_score_history_category_node ON score_history (category, node, id);
CREATE INDEX ix_webhook_bodies_expires ON webhook_bodies (expires_at);
COMMIT;
