import { describeWithService } from '../helpers/services.js';
import { mysqlHarness, probeMysql } from './backends.js';
import { runSegmentStoreContract } from './segment-store-contract.js';

const describeMysql = await describeWithService('MySQL/MariaDB', probeMysql);
describeMysql('mysql', () => runSegmentStoreContract('mysql/mariadb', mysqlHarness));
